"""companion.dream"""
