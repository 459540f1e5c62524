"""What is trained and measured: each task's model, data, training loop and metrics (grokking on modular
addition, CIFAR-10 patches, the routing tasks and the character model), one run of one arm from one seed.
Tasks build their arms from :mod:`stiefel_book.arms`; the experiments (:mod:`stiefel_book.experiments`)
declare which runs to make of them. Nothing here imports an experiment."""
