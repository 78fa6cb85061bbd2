"""The answer key: every worked number of the book's inference chapter, recomputed with the same
formulas and terms as ``step``.  Imports the analyses and everything below them.
"""
