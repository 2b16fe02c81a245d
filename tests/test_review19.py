"""Review 19: the README's truth (a new user who believes every word of it), judged by what Blender shows."""
import pytest

from rigs import add_empty, arm_with_chain, pose_snapshot, readout, tips_off


@pytest.mark.parametrize("role", ["armature", "target"])
@pytest.mark.parametrize("switch, words", [
    ("exclude", "checkbox"),  # the collection's checkbox in the Outliner, which Exclude from View Layer clears
    ("hide_viewport", "screen icon"),  # the collection's own Disable in Viewports
])
def test_a_goal_in_a_collection_the_view_layer_leaves_out_is_refused_with_the_fix_that_works(blender, role, switch,
                                                                                             words):
    """A target in a collection excluded from the view layer is refused by Solve, a live armature there is not solved
    and its read-out says why, as the README says; the message said "enable it in viewports (the screen icon in the
    Outliner)", but the object's and the collection's screen icons were on: what leaves it out is the collection's
    checkbox. The message names the switch that is off, and turning it back on puts the tip on the target."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    subject = obj if role == "armature" else chain.target
    collection = bpy.data.collections.new("Props")
    bpy.context.scene.collection.children.link(collection)
    collection.objects.link(subject)
    bpy.context.scene.collection.objects.unlink(subject)
    layer_collection = bpy.context.view_layer.layer_collection.children["Props"]
    if switch == "exclude":
        layer_collection.exclude = True
    else:
        collection.hide_viewport = True
    if role == "armature":
        chain.live = True
        chain.target.location.x -= 0.1
        bpy.context.view_layer.update()
        message = readout(obj, "arm").message
    else:
        bpy.context.view_layer.update()
        with pytest.raises(RuntimeError) as refused:
            bpy.ops.blender_ik.solve()
        message = str(refused.value)
    assert words in message
    if switch == "exclude":
        layer_collection.exclude = False
    else:
        collection.hide_viewport = False
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    if role == "target":
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert tips_off(bpy, obj, [chain.target], ("b3",))[0] < 1e-5


@pytest.mark.parametrize("operator", ["solve", "bake"])
@pytest.mark.parametrize("tip", ["", "b3"])  # empty: the active bone, as the panel's Tip Bone field says
def test_acting_on_the_active_chain_refuses_bones_another_chain_has(blender, operator, tip):
    """The README: two chains sharing a bone are refused, naming both, and nothing changes. With a second chain on the
    arm's bones (its Tip Bone b3, or left empty with b3 the active bone), Solve and Bake of the active chain went
    ahead: they posed and keyed chain 'arm''s bones for the other target, and an empty Tip Bone was pinned to b3 under
    the name 'b3', leaving two chains on one bone that Solve All then refused."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    other = obj.blender_ik.chains.add()
    other.tip_bone, other.target = tip, add_empty("Other", location=(0.5, 0.3, 1.2))
    obj.blender_ik.active_chain_index = 1
    obj.data.bones.active = obj.data.bones["b3"]
    bpy.context.view_layer.update()
    pose = pose_snapshot(obj)
    with pytest.raises(RuntimeError) as refused:
        if operator == "solve":
            bpy.ops.blender_ik.solve(chains="ACTIVE")
        else:
            bpy.ops.blender_ik.bake(chains="ACTIVE", frame_start=1, frame_end=3)
    assert "Chains 'arm' and 'b3' share bone" in str(refused.value)
    bpy.context.view_layer.update()
    assert pose_snapshot(obj) == pose and obj.animation_data is None
    assert (other.name, other.tip_bone) == ("", tip)
