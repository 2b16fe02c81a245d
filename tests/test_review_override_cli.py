"""Adversarial review: the command line on a shot that links and overrides a rigged character. Expected to
FAIL on the reviewed code: scripts/bake_ik.py opens the file (bpy.ops.wm.open_mainfile in bake_file) before
it registers the add-on (_register_addon), and Blender drops a library override's operations on properties
it does not know while it loads. The override's own chain settings ('Library overrides of an armature keep
their own IK settings', README) are lost: the bake follows the library's settings and the saved file keeps
the library's values."""
import os
import subprocess
import sys

import bpy  # noqa: F401  (mathutils comes with bpy)
import numpy as np
from mathutils import Vector

from rigs import add_empty, link_from_library
from test_chains import body_with_chains

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "bake_ik.py")


def _local(bpy, name):
    return next(obj for obj in bpy.data.objects if obj.name == name and obj.library is None)


def test_review_cli_keeps_an_overridden_chain_target(blender, tmp_path):
    bpy = blender
    # The character file: a body with a hand chain and its target.
    body_with_chains(bpy, ["hand.L"])
    # The shot: the body linked and overridden; the animator points the chain at a shot-local goal, animated.
    body = link_from_library(bpy, tmp_path / "character.blend", "Body").override_create(remap_local_usages=True)
    bpy.context.view_layer.update()
    from blender_ik_addon.ops import tip_target_matrix
    goal = add_empty("shot_goal")
    goal.matrix_world = tip_target_matrix(body, "hand.L", "Z", "NONE")  # at the tip, its Z along the hand
    goal.keyframe_insert("location", frame=1)
    goal.location = tuple(Vector(goal.location) + Vector((0.0, -0.08, 0.08)))
    goal.keyframe_insert("location", frame=5)
    body.blender_ik.chains[0].target = goal
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 5
    shot = tmp_path / "shot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(shot))

    done = subprocess.run([sys.executable, SCRIPT, str(shot)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr

    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "shot_baked.blend"))
    body, goal = _local(bpy, "Body"), _local(bpy, "shot_goal")
    misses = []
    for frame in (1, 3, 5):
        bpy.context.scene.frame_set(frame)
        tip = body.matrix_world @ body.pose.bones["hand.L"].tail
        misses.append(float(np.linalg.norm(np.array(tip - goal.matrix_world.translation))))
    assert max(misses) < 1e-5, f"the baked keys miss the shot's goal by {misses}"
    assert body.blender_ik.chains[0].target == goal, "the override's chain target was lost"
