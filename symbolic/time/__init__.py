"""The step-time model: cards and systems as data (cards.py, systems.py), each group's link (links.py), FLOPs per
layer kind (flops.py), the step's components in seconds (step.py), one configuration evaluated (evaluate.py)."""
