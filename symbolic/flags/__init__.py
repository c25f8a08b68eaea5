"""The flags every command line shares (mem4d's and jaxcheck.distributed's): argparse types and the Training they build."""
