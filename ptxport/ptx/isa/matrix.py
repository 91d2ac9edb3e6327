"""PTX instruction table: placeholder until filled."""

OPS = []
