"""Geometry helpers: the Python fixture of the codeindex tests."""

from geom.shapes import Circle, Square
from geom.util import clamp

__all__ = ["Circle", "Square", "clamp"]
