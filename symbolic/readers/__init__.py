"""Readers of a run as its trainer holds it: Megatron-LM's arguments (megatron.py), read into mem4d's one ModelShape and
Training; every argument modelled, harmless with its reason, or refused in one line (megatron_args.tsv)."""
