"""`mem4d web`: a static page that evaluates the estimator in the browser from the same sympy expressions, printed as
JavaScript (jsprint.py), with the rule table traced into JavaScript (rulesjs.py); build.py writes the site."""
