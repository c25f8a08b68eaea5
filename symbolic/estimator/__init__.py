"""The numpy estimator lambdified from a profile's sympy expressions, and `estimate` for one configuration."""
