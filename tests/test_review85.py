"""Review 85: the goals of chains below a moving chain told from its pose (a hand's and its fingers' chains, each
finger's goal hanging from the palm), judged by what Blender shows. No defect found; kept as a regression test of the
told goals (tests/test_live_levels.py) on the controls an animator makes: parented with Parent > Bone (a parent
inverse) and turned in quaternions, scaled and offset by delta transforms; bone targets below the palm, posed or
through a connected bone; a pole on the palm; the armature moved, turned and scaled; a drag and keyed playback with
subframes. Through an Empty, or with Relative Parenting, the goals cannot be told: solved level by level."""
import pytest

from rigs import readout
from test_live_levels import FINGERS, _drag, _hand_and_fingers, _on_the_palm, evaluations  # noqa: F401 (fixtures)


def _palm(obj, tip):
    return obj.pose.bones[tip].parent.parent.parent.name


def _parent_set(bpy, obj, target, bone, kind):
    """Parent ``target`` to ``bone`` as Object > Parent > Bone (``kind`` "BONE") or Bone Relative does."""
    bpy.ops.object.select_all(action="DESELECT")
    target.select_set(True)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    obj.data.bones.active = obj.data.bones[bone]
    assert bpy.ops.object.parent_set(type=kind) == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")


def _by_operator(bpy, obj, chains, kind="BONE"):
    """Each finger's control turned in quaternions, scaled unevenly and offset by delta transforms where it was, then
    parented to its palm bone by the operator (which keeps it there through a parent inverse). All are unparented
    first: Bone Relative turns the bone's Relative Parenting on, which moves the controls still parented to it."""
    for tip in FINGERS:
        target = chains[tip].target
        world = target.matrix_world.copy()
        target.parent = None
        target.rotation_mode = "QUATERNION"
        target.delta_location, target.delta_rotation_euler = (0.01, -0.02, 0.005), (0.2, 0.1, -0.3)
        target.rotation_quaternion, target.scale = (0.9, 0.1, 0.3, 0.2), (1.3, 0.6, 2.0)
        bpy.context.view_layer.update()
        target.matrix_world = world
    bpy.context.view_layer.update()
    for tip in FINGERS:
        _parent_set(bpy, obj, chains[tip].target, _palm(obj, tip), kind)


def _relative(bpy, obj, chains):
    _by_operator(bpy, obj, chains, "BONE_RELATIVE")


def _bone_targets(bpy, obj, chains, connected=False):
    """Each finger's target a bone of the armature at its control, below its palm bone (``connected``: through a
    connected bone from the palm's tail), posed: turned a little in quaternions, moved and scaled."""
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    bones = obj.data.edit_bones
    for tip in FINGERS:
        parent = bones[_palm(obj, tip)]
        at = obj.matrix_world.inverted() @ chains[tip].target.matrix_world.translation
        if connected:
            between = bones.new("between." + tip)
            between.head, between.tail, between.parent, between.use_connect = parent.tail, at, parent, True
            parent = between
        bone = bones.new("goal." + tip)  # (turned as the tip bone, as the control was)
        bone.head, bone.tail, bone.roll, bone.parent = at, at + bones[tip].vector, bones[tip].roll, parent
    bpy.ops.object.mode_set(mode="OBJECT")
    for tip in FINGERS:
        chains[tip].target, chains[tip].target_bone, chains[tip].up_axis = obj, "goal." + tip, "Y"  # (its direction)
        goal = obj.pose.bones["goal." + tip]
        goal.rotation_mode, goal.rotation_quaternion = "QUATERNION", (0.99, 0.05, 0.03, 0.05)
        goal.location, goal.scale = (0.001, 0.002, 0.0), (1.3, 1.3, 1.3)
        if connected:  # (its location does not count)
            between = obj.pose.bones["between." + tip]
            between.location, between.scale = (0.01, 0.0, 0.0), (1.05, 1.05, 1.05)


def _connected_bone_targets(bpy, obj, chains):
    _bone_targets(bpy, obj, chains, connected=True)


def _poles_on_the_palm(bpy, obj, chains):
    """The controls on the palm bones, and each finger's bend plane through a pole parented to its palm bone."""
    from mathutils import Matrix, Vector
    for tip in FINGERS:
        pole = bpy.data.objects.new("Pole." + tip, None)
        bpy.context.scene.collection.objects.link(pole)
        middle = obj.pose.bones[tip].parent
        pole.matrix_world = obj.matrix_world @ Matrix.Translation(middle.head + Vector((0.0, 0.0, 0.05)))
        bpy.context.view_layer.update()
        world = pole.matrix_world.copy()
        pole.parent, pole.parent_type, pole.parent_bone = obj, "BONE", _palm(obj, tip)
        pole.matrix_world = world
        chains[tip].pole, chains[tip].plane = pole, "POLE"


def _through_an_empty(bpy, obj, chains):
    """Each control parented to an Empty parented to its palm bone."""
    for tip in FINGERS:
        target = chains[tip].target
        world = target.matrix_world.copy()
        between = bpy.data.objects.new("Between." + tip, None)
        bpy.context.scene.collection.objects.link(between)
        between.parent, between.parent_type, between.parent_bone = obj, "BONE", _palm(obj, tip)
        between.location = (0.01, 0.0, 0.0)
        bpy.context.view_layer.update()
        target.parent = between
        target.matrix_world = world


def _moved_turned_scaled(bpy, obj, chains):
    """The armature moved, turned and scaled, the hand's control with it (the others hang from the armature)."""
    from mathutils import Euler, Matrix
    hand = chains["hand.L"].target
    before = obj.matrix_world.copy()
    obj.matrix_world = Matrix.LocRotScale((3.0, -2.0, 1.0), Euler((0.3, -0.2, 1.0)), (1.7, 1.7, 1.7))
    hand.matrix_world = obj.matrix_world @ before.inverted() @ hand.matrix_world
    bpy.context.view_layer.update()


def _on_targets(obj, chains):
    """Every tip where Blender shows it on its target (its bone's head, for a bone target), its read-out saying so."""
    for tip, chain in chains.items():
        goal = chain.target.matrix_world.translation
        if chain.target_bone:
            goal = chain.target.matrix_world @ chain.target.pose.bones[chain.target_bone].head
        miss = ((obj.matrix_world @ obj.pose.bones[tip].tail) - goal).length
        assert miss < 1e-5 and readout(obj, chain.name).status == "REACHED", (tip, miss, readout(obj, chain.name))


def _key(bpy, obj, chains):
    """Keys at frames 1, 10 and 20: the hand's control moving and turning, each finger's control (or goal bone)
    moving a little."""
    scene = bpy.context.scene
    hand = chains["hand.L"].target
    for frame in (1, 10, 20):
        scene.frame_set(frame)
        if frame > 1:
            hand.location.x -= 0.03
            hand.rotation_euler.y += 0.1
        hand.keyframe_insert("location")
        hand.keyframe_insert("rotation_euler")
        for index, tip in enumerate(FINGERS):
            chain = chains[tip]
            control = obj.pose.bones[chain.target_bone] if chain.target_bone else chain.target
            control.location.x += 0.001 * (index + 1) * (frame > 1)
            control.keyframe_insert("location")


@pytest.mark.parametrize("playback", [False, True])
@pytest.mark.parametrize("setup, once", [(_by_operator, True), (_bone_targets, True), (_connected_bone_targets, True),
                                         (_poles_on_the_palm, True), (_through_an_empty, False), (_relative, False)])
def test_finger_goals_hanging_from_the_palm_are_where_blender_shows_them(  # noqa: F811
        blender, evaluations, setup, once, playback):
    """The hand's control dragged (or its keys played, subframes too): the fingers' goals hang from the palm bones the
    hand's pose moves. Told from that pose: one evaluation an update; through an Empty, or with Relative Parenting,
    level by level. Either way every tip is on its target as Blender shows it, its read-out saying reached."""
    bpy = blender
    obj, chains = _hand_and_fingers(bpy, _on_the_palm)
    setup(bpy, obj, chains)
    bpy.context.view_layer.update()
    _moved_turned_scaled(bpy, obj, chains)
    _on_targets(obj, chains)
    if playback:
        _key(bpy, obj, chains)
    for step, (frame, subframe) in enumerate([(2, 0.0), (3, 0.5), (7, 0.25), (15, 0.0), (19, 0.75)]):
        evaluations.reset()
        if playback:
            bpy.context.scene.frame_set(frame, subframe=subframe)
        else:
            _drag(bpy, chains, step)
        assert (evaluations.calls == 1) == once, evaluations.calls
        _on_targets(obj, chains)
