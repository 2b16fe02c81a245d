"""Analytic three-link IK for Blender: exact poses, live follow and fast baking to keyframes.

The math lives in ``solver`` (numpy only, importable without Blender); the modules registered below are
the thin Blender layer around it.
"""
