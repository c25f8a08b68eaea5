"""`mem4d plan`: enumerate a cluster's configurations, mask them with the rules, evaluate, rank, plot."""
