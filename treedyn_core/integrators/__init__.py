"""The time steppers: the θ-method, generalised-α and RK4 (compiled), the DOP853 reference, and the registry that names them."""
