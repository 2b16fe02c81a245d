#!/usr/bin/env python3
"""Build, bake and render a demo scene: a three-bone arm reaching for a target that flies a loop.

    python scripts/demo.py [--output-dir out/demo] [--frames 120] [--quick]
    blender -b -P scripts/demo.py -- [--output-dir out/demo] [--frames 120] [--quick]

The target (an Empty; its Z axis is the up axis the last bone follows) loops around the arm while its
Z axis swings up, down and sideways, and bulges out of reach for a stretch of frames. The add-on bakes
the chain to rotation keys; the keys are then played back with no solver in the loop and every frame is
measured: how far the tip (b3's tail) is from the target, and the angle between b3 and the target's Z.

Writes into the output folder:
  demo.png            the arm at several frames (green in reach, red out of reach), the target's path
                      with its up arrows, and the tip's own path where it has to leave the target's
  demo_plot.png       per frame: how far the wrist would have to reach, the tip error, the angle error
  demo_baked.blend    the baked scene, with the picture's set-up (open it and press play)
Both pictures are rendered by Blender itself with Cycles on the CPU: no GPU, no display needed.
"""
import argparse
import contextlib
import math
import os
import sys
import time

PROG = "demo.py"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # inside Blender (-P) it is not on the path

from _blender_script import (UserError, blender_message, blender_quiet, in_blender, leave,  # noqa: E402
                             sandbox_user_files, script_arguments)

LENGTHS = (1.0, 0.8, 0.4)  # b1, b2, b3, in metres
CHAIN = ("b1", "b2", "b3")
GHOSTS = 7  # arm poses drawn in the picture
FRAMED = (0.38, 0.98, 0.03, 0.03)  # the scene's box in the picture: from the left and right, bottom and top
                                   # margins (fractions of the picture's width); the text is on the left
OUT_OF_REACH_SHARE = 0.55  # where, through the loop, the target bulges out of reach

# Render settings: (width, height, samples) of the scene and of the plot.
FULL = {"scene": (960, 540, 16), "plot": (1280, 720, 8)}
QUICK = {"scene": (320, 180, 4), "plot": (480, 270, 2)}

# Colours (sRGB hex).
IN_REACH = "2e9e5b"
OUT_OF_REACH = "d9412b"
TARGET = "f2a516"
PATH = "4f6d8f"
TIP_PATH = "262626"
GROUND = "e9e7e2"
POST = "5b5f66"
INK = "1e2126"
SOFT_INK = "6b7280"
GRID = "dcdfe4"
BAND = "fbe3df"


def _frames(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: '{text}'") from None
    if value < 20:
        raise argparse.ArgumentTypeError(f"must be 20 or more, to show a loop (got {value})")
    return value


def make_parser():
    parser = argparse.ArgumentParser(
        prog=PROG, description="Build a demo scene, bake it with the add-on, save the .blend and render pictures "
                               "of the result (Cycles on the CPU; no GPU or display needed).")
    parser.add_argument("--output-dir", default=os.path.join("out", "demo"), metavar="DIR",
                        help="where to write demo.png, demo_plot.png and demo_baked.blend (default: out/demo; "
                             "created if missing)")
    parser.add_argument("--frames", type=_frames, default=120, metavar="N",
                        help="frames in the animation, 20 or more (default: 120)")
    parser.add_argument("--quick", action="store_true",
                        help=f"tiny, fast renders ({QUICK['scene'][0]}x{QUICK['scene'][1]}, {QUICK['scene'][2]} "
                             "samples), for tests")
    return parser


def linear(hex_color, alpha=1.0):
    """sRGB hex -> linear RGBA, the space Blender's colour sockets work in."""
    channels = [int(hex_color[i:i + 2], 16) / 255.0 for i in (0, 2, 4)]
    return tuple(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels) + (alpha,)


def compact(frames):
    from blender_ik_addon.bake import compact_frames
    return compact_frames(frames) if len(frames) else "none"


def frame_runs(frames):
    """[3, 4, 5, 9] -> [[3, 4, 5], [9]]: the stretches of consecutive frames."""
    runs = []
    for frame in frames:
        if runs and frame == runs[-1][-1] + 1:
            runs[-1].append(frame)
        else:
            runs.append([frame])
    return runs


# -- The scene ---------------------------------------------------------------------------------------------

def build_arm(bpy):
    """An armature with a root bone (the post) and the chain b1 > b2 > b3, bent in XZ at rest."""
    from mathutils import Vector

    data = bpy.data.armatures.new("Arm")
    data.display_type = "OCTAHEDRAL"
    armature = bpy.data.objects.new("Arm", data)
    armature.show_in_front = True
    bpy.context.scene.collection.objects.link(armature)
    bpy.context.view_layer.objects.active = armature
    bpy.ops.object.mode_set(mode="EDIT")
    parent = data.edit_bones.new("root")
    parent.head, parent.tail = (0.0, 0.0, -0.5), (0.0, 0.0, 0.0)
    directions = [Vector((0.0, 0.0, 1.0)), Vector((0.6, 0.0, 0.8)), Vector((1.0, 0.0, 0.0))]
    for name, length, direction in zip(CHAIN, LENGTHS, directions):
        bone = data.edit_bones.new(name)
        bone.head = parent.tail
        bone.tail = bone.head + direction * length
        bone.parent = parent
        bone.use_connect = True
        parent = bone
    bpy.ops.object.mode_set(mode="OBJECT")
    for name in CHAIN:
        armature.pose.bones[name].rotation_mode = "QUATERNION"
    return armature


def target_pose(share):
    """The target at ``share`` of the loop (0 <= share < 1): (location, rotation matrix columns X, Y, Z).

    A loop around the arm, rising and falling twice; for a stretch it bulges outward, beyond what the
    arm can reach. The Z axis (the up axis) points outward and swings up, down and sideways."""
    import numpy as np

    bulge_at, bulge_width = -0.5, 0.95  # radians: the bulge faces the camera's right
    t = 2.0 * math.pi * share + bulge_at - 2.0 * math.pi * OUT_OF_REACH_SHARE
    offset = math.remainder(t - bulge_at, 2.0 * math.pi)
    bulge = 0.5 * (1.0 + math.cos(math.pi * offset / bulge_width)) if abs(offset) < bulge_width else 0.0
    radius = 1.25 + 1.35 * bulge
    radial = np.array([math.cos(t), math.sin(t), 0.0])
    along = np.array([-math.sin(t), math.cos(t), 0.0])
    vertical = np.array([0.0, 0.0, 1.0])
    location = radius * radial + (0.45 + 0.3 * math.sin(2.0 * t)) * vertical
    tilt = 0.35 + 0.5 * math.sin(3.0 * t)
    z_axis = math.cos(tilt) * radial + math.sin(tilt) * vertical + 0.35 * math.sin(2.0 * t) * along
    z_axis /= np.linalg.norm(z_axis)
    x_axis = along - z_axis * np.dot(along, z_axis)  # never parallel to Z: Z leans outward
    x_axis /= np.linalg.norm(x_axis)
    return location, (x_axis, np.cross(z_axis, x_axis), z_axis)


def build_target(bpy, frames):
    """The target Empty, keyed on every frame along :func:`target_pose`."""
    from mathutils import Euler, Matrix

    target = bpy.data.objects.new("Target", None)
    target.empty_display_type = "SINGLE_ARROW"  # shows the up axis, Z
    target.empty_display_size = 0.35
    bpy.context.scene.collection.objects.link(target)
    previous = Euler()
    for frame in range(1, frames + 1):
        location, axes = target_pose((frame - 1) / frames)
        rotation = Matrix([list(column) for column in axes]).transposed()
        previous = rotation.to_euler("XYZ", previous)
        target.location = tuple(location)
        target.rotation_euler = previous
        target.keyframe_insert("location", frame=frame)
        target.keyframe_insert("rotation_euler", frame=frame)
    return target


@contextlib.contextmanager
def no_target(armature):
    """Play the baked keys back with nothing to re-solve them."""
    settings = armature.blender_ik
    target = settings.target
    settings.target = None
    try:
        yield
    finally:
        settings.target = target


def measure(bpy, scene, armature, target, frames, steps):
    """Replay the keys: per frame the tip error and angle error, joints; a finer path of target and tip.

    Returns a dict of numpy arrays: ``error`` (m) and ``angle`` (rad) per frame, ``joints`` (N, 4, 3)
    (shoulder, elbow, wrist, tip), ``goal`` (N, 3), ``up`` (N, 3), ``wrist_demand`` (N,) the distance
    from the shoulder to where the wrist must be (the target less b3's length along Z), and ``path``
    and ``tip_path`` (M, 3) sampled ``steps`` times per frame, at the frames ``path_frame`` (M,)."""
    import numpy as np

    pose_bones = [armature.pose.bones[name] for name in CHAIN]
    rows = {key: [] for key in ("error", "angle", "joints", "goal", "up", "wrist_demand", "path", "tip_path",
                                "path_frame")}
    with no_target(armature):
        for frame in frames:
            for step in range(steps if frame != frames[-1] else 1):
                scene.frame_set(int(frame), subframe=step / steps)
                world = armature.matrix_world
                joints = [world @ pose_bones[0].head] + [world @ bone.tail for bone in pose_bones]
                goal = target.matrix_world.translation.copy()
                rows["path"].append(tuple(goal))
                rows["tip_path"].append(tuple(joints[-1]))
                rows["path_frame"].append(frame + step / steps)
                if step:
                    continue
                up = target.matrix_world.to_3x3().col[2].normalized()
                direction = (joints[3] - joints[2]).normalized()
                rows["error"].append((joints[3] - goal).length)
                rows["angle"].append(math.atan2(direction.cross(up).length, direction.dot(up)))
                rows["joints"].append([tuple(joint) for joint in joints])
                rows["goal"].append(tuple(goal))
                rows["up"].append(tuple(up))
                rows["wrist_demand"].append((goal - LENGTHS[2] * up - joints[0]).length)
    return {key: np.array(value, dtype=np.float64) for key, value in rows.items()}


# -- Pictures: geometry and materials ---------------------------------------------------------------------

def material(bpy, name, hex_color, emit=False, roughness=0.5):
    mat = bpy.data.materials.new(name)
    color = linear(hex_color)
    mat.diffuse_color = color  # the viewport's solid colour
    if mat.node_tree is None:  # bpy < 5.0 makes materials without nodes
        mat.use_nodes = True
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    output = next(node for node in nodes if node.type == "OUTPUT_MATERIAL")
    if emit:  # flat colour, for the plot's lines and text
        for node in [node for node in nodes if node.type == "BSDF_PRINCIPLED"]:
            nodes.remove(node)
        emission = nodes.new("ShaderNodeEmission")
        emission.inputs["Color"].default_value = color
        links.new(emission.outputs["Emission"], output.inputs["Surface"])
    else:
        bsdf = next(node for node in nodes if node.type == "BSDF_PRINCIPLED")
        bsdf.inputs["Base Color"].default_value = color
        bsdf.inputs["Roughness"].default_value = roughness
    return mat


def mesh_object(bpy, name, build, mat, collection):
    """A mesh object made by ``build(bm)`` with bmesh; side faces smooth, caps flat."""
    import bmesh

    bm = bmesh.new()
    build(bm)
    for face in bm.faces:
        face.smooth = len(face.verts) <= 4
    mesh = bpy.data.meshes.new(name)
    bm.to_mesh(mesh)
    bm.free()
    mesh.materials.append(mat)
    obj = bpy.data.objects.new(name, mesh)
    collection.objects.link(obj)
    return obj


def segment_matrix(a, b):
    """Matrix and length placing a Z-aligned, origin-centred cone between points ``a`` and ``b``."""
    from mathutils import Matrix, Vector

    a, b = Vector(a), Vector(b)
    rotation = (b - a).to_track_quat("Z", "Y").to_matrix().to_4x4()
    return Matrix.Translation((a + b) / 2.0) @ rotation, (b - a).length


def add_cone(bm, a, b, radius_a, radius_b, segments=20):
    import bmesh

    matrix, length = segment_matrix(a, b)
    bmesh.ops.create_cone(bm, cap_ends=True, cap_tris=False, segments=segments, radius1=radius_a,
                          radius2=radius_b, depth=length, matrix=matrix)


def add_sphere(bm, center, radius, segments=20):
    import bmesh
    from mathutils import Matrix

    bmesh.ops.create_uvsphere(bm, u_segments=segments, v_segments=segments // 2, radius=radius,
                              matrix=Matrix.Translation(center))


def add_arm_pose(bm, joints):
    """Bones as tapered rods between the joints, like Blender's bones, with ball joints."""
    radii = [0.065, 0.05, 0.04, 0.022]
    for index in range(3):
        add_cone(bm, joints[index], joints[index + 1], radii[index], radii[index + 1] * 0.8)
    for joint, radius in zip(joints, radii):
        add_sphere(bm, joint, radius)


def add_up_arrow(bm, goal, up):
    """The target: a ball, and an arrow along its up axis (where b3 must point)."""
    import numpy as np

    add_sphere(bm, goal, 0.045)
    shaft_end = np.asarray(goal) + 0.2 * np.asarray(up)
    add_cone(bm, goal, shaft_end, 0.011, 0.011, segments=12)
    add_cone(bm, shaft_end, shaft_end + 0.1 * np.asarray(up), 0.032, 0.0, segments=16)


def poly_curve(bpy, name, pieces, radius, materials, collection):
    """A tube along polylines; ``pieces`` is [(points (K, 3), material index)]."""
    import numpy as np

    data = bpy.data.curves.new(name, "CURVE")
    data.dimensions = "3D"
    data.bevel_depth = radius
    data.bevel_resolution = 4
    data.use_fill_caps = True
    for mat in materials:
        data.materials.append(mat)
    for points, index in pieces:
        spline = data.splines.new("POLY")
        spline.points.add(len(points) - 1)
        coords = np.hstack([np.asarray(points, dtype=np.float64), np.ones((len(points), 1))])
        spline.points.foreach_set("co", coords.ravel())
        spline.material_index = index
    obj = bpy.data.objects.new(name, data)
    collection.objects.link(obj)
    return obj


def split_runs(points, flags):
    """Consecutive runs of equal flags, each run sharing its first point with the previous run's last."""
    runs, start = [], 0
    for index in range(1, len(points) + 1):
        if index == len(points) or flags[index] != flags[start]:
            end = min(index + 1, len(points))
            if end - start >= 2:
                runs.append((points[start:end], int(flags[start])))
            start = index
    return runs


def text_object(bpy, name, body, size, mat, collection, align_x="LEFT", align_y="BOTTOM"):
    data = bpy.data.curves.new(name, "FONT")
    data.body = body
    data.size = size
    data.align_x = align_x
    data.align_y = align_y
    data.materials.append(mat)
    obj = bpy.data.objects.new(name, data)
    collection.objects.link(obj)
    return obj


def new_collection(bpy, scene, name):
    collection = bpy.data.collections.new(name)
    scene.collection.children.link(collection)
    return collection


def set_world(bpy, scene, hex_color, strength):
    world = bpy.data.worlds.new(f"{scene.name} World")
    if world.node_tree is None:  # bpy < 5.0
        world.use_nodes = True
    background = next(node for node in world.node_tree.nodes if node.type == "BACKGROUND")
    background.inputs["Color"].default_value = linear(hex_color)
    background.inputs["Strength"].default_value = strength
    world.color = linear(hex_color)[:3]
    scene.world = world


def set_render(scene, width, height, samples):
    """Cycles on the CPU: renders headless with no GPU and no display (Workbench and EEVEE need an OpenGL
    context, through EGL at best, and EEVEE takes minutes on a CPU)."""
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_adaptive_sampling = False
    scene.cycles.use_denoising = False  # loading the denoiser costs more than the whole render
    scene.cycles.max_bounces = 2  # light scene, pale colours: more bounces cost time, not looks
    scene.render.resolution_x, scene.render.resolution_y = width, height
    scene.render.resolution_percentage = 100
    scene.render.film_transparent = False
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGB"
    scene.view_settings.view_transform = "Standard"  # colours as chosen, white stays white
    scene.view_settings.look = "None"


def render(bpy, scene, path):
    scene.render.filepath = path
    began = time.perf_counter()
    try:
        with blender_quiet():
            bpy.ops.render.render(write_still=True, scene=scene.name)
    except RuntimeError as error:
        raise UserError(f"cannot render {path}: {blender_message(error)}") from None
    if not os.path.isfile(path):
        raise UserError(f"the render did not write {path}")
    return time.perf_counter() - began


def ghost_frames(frames, unreachable):
    """GHOSTS frames spread over the animation, one of them in the middle of the longest stretch out of reach."""
    count = len(frames)
    chosen = [int(frames[int((k + 0.5) * count / GHOSTS)]) for k in range(GHOSTS)]
    if unreachable:
        longest = max(frame_runs(unreachable), key=len)
        middle = longest[len(longest) // 2]
        nearest = min(range(GHOSTS), key=lambda k: abs(chosen[k] - middle))
        chosen[nearest] = middle
    return sorted(set(chosen))


# -- The 3D picture ---------------------------------------------------------------------------------------

def build_picture(bpy, scene, data, frames, unreachable, size, caption):
    """Ghost arms, target path and arrows, tip path, ground, light, camera and captions in ``scene``.

    Returns the frames the arm is drawn at."""
    import numpy as np

    out = set(unreachable)
    collection = new_collection(bpy, scene, "Picture")
    colours = {"in": material(bpy, "In reach", IN_REACH, roughness=0.35),
               "out": material(bpy, "Out of reach", OUT_OF_REACH, roughness=0.35),
               "target": material(bpy, "Target", TARGET, roughness=0.3),
               "path": material(bpy, "Path", PATH, roughness=0.4),
               "tip": material(bpy, "Tip path", TIP_PATH)}

    shown = ghost_frames(frames, unreachable)
    for frame in shown:
        index = int(np.searchsorted(frames, frame))
        mesh_object(bpy, f"Arm at frame {frame}", lambda bm, j=data["joints"][index]: add_arm_pose(bm, j),
                    colours["out" if frame in out else "in"], collection)
        mesh_object(bpy, f"Target at frame {frame}",
                    lambda bm, g=data["goal"][index], u=data["up"][index]: add_up_arrow(bm, g, u),
                    colours["target"], collection)
    # The target's path, red where the arm cannot reach it; the tip's own path (dark, thinner) shows only
    # where it leaves the target's, inside the red stretch.
    # Both close the loop, as the animation does when it repeats.
    nearest = np.clip(np.round(data["path_frame"]).astype(int), frames[0], frames[-1])
    flags = np.isin(nearest, list(out))
    path, tip_path = (np.vstack([data[key], data[key][:1]]) for key in ("path", "tip_path"))
    poly_curve(bpy, "Target path", split_runs(path, np.append(flags, flags[0])), 0.013,
               [colours["path"], colours["out"]], collection)
    poly_curve(bpy, "Tip path", [(tip_path, 0)], 0.007, [colours["tip"]], collection)

    build_stage(bpy, scene, collection)
    camera = place_camera(bpy, scene, collection, data, size)
    add_captions(bpy, camera, collection, caption, colours, size)
    ink = material(bpy, "Ink", INK, emit=True)
    up = camera.matrix_world.to_3x3().col[1]
    for frame in shown:  # frame numbers beyond the arrows, facing the camera
        index = int(np.searchsorted(frames, frame))
        label = text_object(bpy, f"Frame {frame}", f"{frame}", 0.11, ink, collection, align_x="CENTER")
        label.location = data["goal"][index] + 0.4 * data["up"][index] + 0.05 * np.array(up)
        label.rotation_euler = camera.rotation_euler
        label.visible_shadow = False
    return shown


def build_stage(bpy, scene, collection):
    """The post under the shoulder (the root bone), a floor, a soft sun and a pale sky."""
    mesh_object(bpy, "Post", lambda bm: add_cone(bm, (0, 0, -0.5), (0, 0, -0.04), 0.09, 0.07),
                material(bpy, "Post", POST, roughness=0.6), collection)
    # Wide enough that its edge stays beyond the top of the frame.
    mesh_object(bpy, "Floor", lambda bm: add_cone(bm, (0, 0, -0.52), (0, 0, -0.5), 60.0, 60.0, 64),
                material(bpy, "Floor", GROUND, roughness=0.9), collection)
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.data.energy = 3.2
    sun.data.angle = math.radians(12.0)
    sun.rotation_euler = (math.radians(38.0), 0.0, math.radians(-30.0))
    collection.objects.link(sun)
    set_world(bpy, scene, "e9edf3", 0.9)


def place_camera(bpy, scene, collection, data, size):
    """A camera from the front right, above, framing everything in the box ``FRAMED``."""
    import numpy as np
    from mathutils import Vector

    camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    camera.data.lens = 40.0
    camera.data.sensor_fit = "HORIZONTAL"
    camera.data.clip_end = 200.0
    collection.objects.link(camera)
    scene.camera = camera
    view = np.array(Vector((0.55, -1.0, 0.85)).normalized())
    camera.rotation_euler = Vector(-view).to_track_quat("-Z", "Y").to_euler()
    axes = np.array(camera.rotation_euler.to_matrix())  # columns: right, up, backward
    half_width = camera.data.sensor_width / 2.0 / camera.data.lens  # the frame at depth 1
    half_height = half_width * size[1] / size[0]
    left, right = (-half_width + 2.0 * half_width * u for u in FRAMED[:2])
    low, high = -half_height + 2.0 * half_width * FRAMED[2], half_height - 2.0 * half_width * FRAMED[3]
    wanted = np.array([(left + right) / 2.0, (low + high) / 2.0]), np.array([(right - left) / 2.0, (high - low) / 2.0])
    points = np.vstack([data["path"], data["joints"].reshape(-1, 3), data["goal"] + 0.45 * data["up"]])
    location = points.mean(axis=0) + 8.0 * view
    for _ in range(12):  # slide sideways to centre the points, then move along the view to fit them
        local = (points - location) @ axes
        depth = -local[:, 2]
        image = local[:, :2] / depth[:, None]
        middle, half = (image.max(0) + image.min(0)) / 2.0, (image.max(0) - image.min(0)) / 2.0
        typical = float(np.median(depth))
        location = location + axes[:, :2] @ ((middle - wanted[0]) * typical)
        location = location + view * typical * (float((half / wanted[1]).max()) - 1.0)
    camera.location = tuple(location)
    return camera


def add_captions(bpy, camera, collection, caption, colours, size):
    """The left column: title, results (``caption``: [(style, text)]) and legend, as flat text on a plane
    in front of the camera, parented to it.

    Positions and sizes are in fractions of the picture's width, from its top-left corner down."""
    half_width = camera.data.sensor_width / 2.0 / camera.data.lens  # at depth 1
    top = half_width * size[1] / size[0]
    scale = 2.0 * half_width

    def place(obj, u, v):
        obj.parent = camera
        obj.location = (-half_width + scale * u, top - scale * v, -1.0)
        obj.visible_shadow = False
        return obj

    ink, soft = material(bpy, "Caption ink", INK, emit=True), material(bpy, "Caption soft", SOFT_INK, emit=True)
    styles = {"title": (0.027, 1.3, ink), "head": (0.0165, 1.55, ink), "body": (0.0155, 1.45, soft)}
    u, v = 0.035, 0.035
    for index, (style, body) in enumerate(caption):
        text_size, spacing, mat = styles[style]
        if style == "head" and index and caption[index - 1][0] != "head":
            v += 0.6 * text_size * spacing  # a gap before each heading
        v += text_size * spacing
        place(text_object(bpy, f"Caption {index}", body, scale * text_size, mat, collection), u, v)

    legend = [("in reach", colours["in"], "dot"), ("out of reach", colours["out"], "dot"),
              ("target, arrow = its Z axis", colours["target"], "dot"), ("target's path", colours["path"], "line"),
              ("tip's path, off the target", colours["tip"], "line")]
    text_size = 0.0155
    v = size[1] / size[0] - 0.035 - len(legend) * text_size * 1.6
    for index, (body, mat, kind) in enumerate(legend):
        v += text_size * 1.6
        if kind == "dot":
            shape = mesh_object(bpy, f"Legend {index}", lambda bm: add_sphere(bm, (0, 0, 0), 0.0065 * scale, 12),
                                mat, collection)
            place(shape, u + 0.011, v - 0.0055)
        else:
            shape = mesh_object(bpy, f"Legend {index}", lambda bm: add_cone(
                bm, (0, 0, 0), (0.022 * scale, 0, 0), 0.002 * scale, 0.002 * scale, 8), mat, collection)
            place(shape, u, v - 0.0055)
        place(text_object(bpy, f"Legend text {index}", body, scale * text_size, soft, collection), u + 0.032, v)


# -- The plot ---------------------------------------------------------------------------------------------

class Panel:
    """A chart area in plot units (the plot is 16 x 9), frames along x, a linear or log10 value along y."""

    def __init__(self, box, frames, low, high, log=False):
        self.x0, self.y0, self.x1, self.y1 = box
        self.f0, self.f1 = float(frames[0]), float(frames[-1])
        self.low, self.high, self.log = low, high, log

    def x(self, frame):
        return self.x0 + (self.x1 - self.x0) * (frame - self.f0) / (self.f1 - self.f0)

    def y(self, value):
        import numpy as np

        if self.log:
            value = np.log10(np.maximum(value, 10.0 ** self.low))
        value = np.clip(value, self.low, self.high)
        return self.y0 + (self.y1 - self.y0) * (value - self.low) / (self.high - self.low)


def log_range(values, floor):
    """Whole decades around the positive ``values``: (low, high) exponents."""
    import numpy as np

    positive = values[values > 0]
    low = math.floor(np.log10(positive.min())) if len(positive) else floor
    high = math.ceil(np.log10(values.max())) if len(positive) else floor + 1
    return max(low, floor), max(high, max(low, floor) + 1)


def zero_note(values):
    return "; exactly 0 is drawn on the bottom line" if (values == 0).any() else ""


def decade_label(exponent):
    return f"{10.0 ** exponent:g}" if -3 <= exponent <= 3 else f"1e{exponent}"


def build_plot(bpy, frames, unreachable, data, reach):
    """A new scene: three charts over the frames, drawn with flat-coloured curves and text."""
    import numpy as np

    scene = bpy.data.scenes.new("Plot")
    set_world(bpy, scene, "ffffff", 1.0)
    collection = scene.collection
    ink, soft = material(bpy, "Plot ink", INK, emit=True), material(bpy, "Plot soft ink", SOFT_INK, emit=True)
    grid, band = material(bpy, "Plot grid", GRID, emit=True), material(bpy, "Plot band", BAND, emit=True)
    green, red = material(bpy, "Plot in reach", IN_REACH, emit=True), material(bpy, "Plot out", OUT_OF_REACH, emit=True)
    blue = material(bpy, "Plot line", PATH, emit=True)
    out = np.isin(frames, unreachable)

    error_mm = data["error"] * 1000.0
    angle_urad = data["angle"] * 1e6
    panels = [
        ("How far the wrist must reach (m)", Panel((1.5, 6.05, 15.4, 7.85), frames, 0.0,
                                                   math.ceil(max(data["wrist_demand"].max(), reach) * 2.2) / 2.0),
         data["wrist_demand"]),
        ("Tip to target (mm), log scale" + zero_note(error_mm),
         Panel((1.5, 3.35, 15.4, 5.15), frames, *log_range(error_mm, -9), log=True), error_mm),
        ("Angle between b3 and the target's Z (µrad), log scale" + zero_note(angle_urad),
         Panel((1.5, 0.65, 15.4, 2.45), frames, *log_range(angle_urad, -6), log=True), angle_urad),
    ]
    text = 0.2
    for number, (title, panel, values) in enumerate(panels):
        # Out-of-reach frames as a pale band behind the chart.
        for run in frame_runs(unreachable):
            x0, x1 = max(panel.x(run[0] - 0.5), panel.x0), min(panel.x(run[-1] + 0.5), panel.x1)
            quad = bpy.data.meshes.new("Band")
            quad.from_pydata([(x0, panel.y0, -0.01), (x1, panel.y0, -0.01), (x1, panel.y1, -0.01),
                              (x0, panel.y1, -0.01)], [], [(0, 1, 2, 3)])
            quad.materials.append(band)
            collection.objects.link(bpy.data.objects.new("Band", quad))
        # Grid lines and their labels.
        if panel.log:
            step = 1 if panel.high - panel.low <= 6 else 2
            ticks = [(10.0 ** e, decade_label(e)) for e in range(int(panel.low), int(panel.high) + 1, step)]
        else:
            ticks = [(v, f"{v:g}") for v in np.arange(0.0, panel.high + 1e-9, 0.5)]
        lines = []
        for value, label in ticks:
            y = float(panel.y(value))
            lines.append((np.array([(panel.x0, y, -0.005), (panel.x1, y, -0.005)]), 0))
            text_object(bpy, "Tick", label, text * 0.85, soft, collection, align_x="RIGHT",
                        align_y="CENTER").location = (panel.x0 - 0.12, y, 0.0)
        poly_curve(bpy, "Grid", lines, 0.008, [grid], collection)
        poly_curve(bpy, "Axis", [(np.array([(panel.x0, panel.y0, 0), (panel.x1, panel.y0, 0)]), 0),
                                 (np.array([(panel.x0, panel.y0, 0), (panel.x0, panel.y1, 0)]), 0)],
                   0.012, [soft], collection)
        text_object(bpy, "Title", title, text * 1.05, ink, collection).location = (panel.x0, panel.y1 + 0.14, 0)
        # The data: a line through dots, one dot per frame, green in reach, red out of reach.
        xs, ys = panel.x(frames.astype(float)), panel.y(values)
        points = np.stack([xs, ys, np.full_like(xs, 0.01)], -1)
        poly_curve(bpy, "Line", [(points, 0)], 0.01, [blue], collection)
        dot = 0.045 if len(frames) <= 150 else 0.03
        for flag, mat in ((False, green), (True, red)):
            chosen = points[out == flag]
            if len(chosen):
                mesh_object(bpy, "Dots", lambda bm, c=chosen: [add_sphere(bm, p + (0, 0, 0.02), dot, 10) for p in c],
                            mat, collection)
        if number == 0:
            y = float(panel.y(reach))
            poly_curve(bpy, "Reach", [(np.array([(panel.x0, y, 0.005), (panel.x1, y, 0.005)]), 0)], 0.014, [red],
                       collection)
            text_object(bpy, "Reach label", f"the arm's reach, {reach:g} m", text * 0.85, red, collection,
                        align_x="RIGHT").location = (panel.x1, y + 0.2, 0.0)
    # Frame numbers under the last chart.
    last = panels[-1][1]
    step = max(1, int(round(len(frames) / 8 / 5.0)) * 5)
    for frame in [int(frames[0])] + list(range(step, int(frames[-1]) + 1, step)):
        text_object(bpy, "Frame", f"{frame}", text * 0.85, soft, collection, align_x="CENTER",
                    align_y="TOP").location = (last.x(frame), last.y0 - 0.1, 0.0)
    text_object(bpy, "Frames", "frame", text * 0.85, soft, collection, align_x="RIGHT",
                align_y="TOP").location = (last.x1, last.y0 - 0.38, 0.0)
    text_object(bpy, "Heading", "Baked keys played back frame by frame, no solver in the loop", text * 1.35, ink,
                collection).location = (0.5, 8.45, 0.0)
    text_object(bpy, "Key", "one dot per frame: green in reach, red out of reach (shaded)", text * 0.85, soft,
                collection, align_x="RIGHT").location = (15.4, 8.45, 0.0)

    camera = bpy.data.objects.new("Plot camera", bpy.data.cameras.new("Plot camera"))
    camera.data.type = "ORTHO"
    camera.data.ortho_scale = 16.0
    camera.location = (8.0, 4.5, 10.0)
    collection.objects.link(camera)
    scene.camera = camera
    return scene


# -- The run ----------------------------------------------------------------------------------------------

def run(bpy, args, settings):
    import numpy as np

    from blender_ik_addon import bake, rig

    output_dir = os.path.abspath(args.output_dir)
    try:
        os.makedirs(output_dir, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create {args.output_dir}: {error.strerror or error}") from None
    blend_path = os.path.join(output_dir, "demo_baked.blend")
    picture_path = os.path.join(output_dir, "demo.png")
    plot_path = os.path.join(output_dir, "demo_plot.png")

    scene = bpy.context.scene
    scene.name = "Demo"
    scene.frame_start, scene.frame_end = 1, args.frames
    scene.render.fps = 24
    armature = build_arm(bpy)
    target = build_target(bpy, args.frames)
    ik = armature.blender_ik
    ik.tip_bone = "b3"
    ik.target = target
    ik.up_axis = "Z"
    scene.frame_set(1)

    try:
        result = bake.bake_chain(scene, armature, 1, args.frames)
    except rig.RigError as error:
        raise UserError(f"the bake failed: {error}") from None
    frames = result.frames
    unreachable = [int(f) for f in result.unreachable]

    data = measure(bpy, scene, armature, target, frames, steps=max(1, math.ceil(480 / len(frames))))
    reachable = ~np.isin(frames, unreachable)
    tip_error = float(data["error"][reachable].max()) if reachable.any() else 0.0
    angle_error = float(data["angle"].max())
    miss = float(data["error"][~reachable].max()) if (~reachable).any() else 0.0
    scene.frame_set(1)

    caption = [("title", "Analytic three-bone IK"),
               ("body", f"{len(frames)} frames baked in {result.seconds * 1000:.0f} ms"),
               ("head", f"In reach, {int(reachable.sum())} frames"),
               ("body", f"tip on the target within {tip_error * 1000:.2g} mm"),
               ("body", f"last bone along the target's Z within {angle_error * 1e6:.2g} µrad")]
    if unreachable:
        caption += [("head", f"Out of reach, frames {compact(unreachable)}"),
                    ("body", f"the closest pose: tip up to {miss * 1000:.0f} mm short,"),
                    ("body", "last bone still along the target's Z")]
    width, height, samples = settings["scene"]
    shown = build_picture(bpy, scene, data, frames, unreachable, (width, height), caption)
    set_render(scene, width, height, samples)
    try:
        with blender_quiet():
            bpy.ops.wm.save_as_mainfile(filepath=blend_path, copy=True)
    except RuntimeError as error:
        raise UserError(f"cannot write {blend_path}: {blender_message(error)}") from None

    picture_seconds = render(bpy, scene, picture_path)
    plot = build_plot(bpy, frames, unreachable, data, LENGTHS[0] + LENGTHS[1])
    set_render(plot, *settings["plot"])
    plot.cycles.max_bounces = 0  # flat colours only
    plot_seconds = render(bpy, plot, plot_path)

    def shown_path(path):
        relative = os.path.relpath(path)
        return relative if not relative.startswith("..") else path

    print(result.summary() + f", in {result.seconds * 1000:.1f} ms"
          + (" (read from the F-curves)" if result.direct else " (frame by frame)"))
    print(f"In reach ({int(reachable.sum())} frames): max tip error {tip_error * 1000:.3g} mm, "
          f"max angle error {angle_error * 1e6:.3g} µrad (keys replayed, measured by Blender)")
    if unreachable:
        print(f"Out of reach ({len(unreachable)} frames): the closest pose, tip up to {miss * 1000:.0f} mm short; "
              f"angle error still within {float(data['angle'][~reachable].max()) * 1e6:.3g} µrad")
    print(f"Rendered with Cycles on the CPU: picture {width}x{height} in {picture_seconds:.1f} s, "
          f"plot {settings['plot'][0]}x{settings['plot'][1]} in {plot_seconds:.1f} s")
    print(f"  {shown_path(picture_path)}   the arm at frames {', '.join(map(str, shown))}, the target's path")
    print(f"  {shown_path(plot_path)}   per frame: reach needed, tip error, angle error")
    print(f"  {shown_path(blend_path)}   the baked scene (open it and press play)")


def main(argv=None):
    blender = in_blender()
    args = make_parser().parse_args(script_arguments(sys.argv if argv is None else argv, blender))
    sandbox_user_files("blender_ik_demo_")
    import bpy

    import blender_ik_addon

    with blender_quiet():
        bpy.ops.wm.read_factory_settings(use_empty=True)
    try:
        blender_ik_addon.register()
    except (ValueError, RuntimeError) as error:
        print(f"{PROG}: error: cannot register the add-on: {blender_message(error)}", file=sys.stderr)
        return 1
    try:
        run(bpy, args, QUICK if args.quick else FULL)
    except UserError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    finally:
        blender_ik_addon.unregister()  # a Python handler left in bpy.app.handlers crashes bpy 4.2 at exit
    return 0


if __name__ == "__main__":
    leave(main())
