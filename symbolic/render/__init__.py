"""What people read: simplified text and LaTeX of the expressions, the formula list, the LaTeX report."""
