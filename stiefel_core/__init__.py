"""stiefel_core: Stiefel frames for attention's W_Q and W_K, and the Riemannian Adam that trains them."""

__version__ = "0.1.0"
