"""Analytic three-link IK for Blender: exact poses, live follow and fast baking to keyframes.

The math lives in ``solver`` (numpy only, importable without Blender). The Blender layer is the
modules below, registered in this order and unregistered in reverse. They are imported on
``register()`` so that ``blender_ik_addon.solver`` stays importable where there is no ``bpy``.
"""
import importlib

_MODULES = ("props", "ops", "ui", "live")


def _modules():
    return [importlib.import_module(f".{name}", __package__) for name in _MODULES]


def register():
    for module in _modules():
        module.register()


def unregister():
    for module in reversed(_modules()):
        module.unregister()
