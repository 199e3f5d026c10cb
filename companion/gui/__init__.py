"""companion.gui"""
