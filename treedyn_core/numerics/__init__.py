"""Numerical building blocks under the physics: the compiled-kernel decorator and its cache, 3×3 and SO(3) algebra, fast elementary functions, the tree-structured low-rank solves."""
