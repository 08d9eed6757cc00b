// Intentionally empty: stands in for MathJax, which nbconvert would otherwise load from a CDN.
