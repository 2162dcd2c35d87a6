"""Figures as PNG and SVG: what each kind reads and computes, and the house style they are drawn
in."""
