"""Live on chains below chains (a hand's and its fingers'): the levels below are solved on bases told from the poses
just solved, and Blender evaluates once per update, not once per level (each evaluation re-evaluates what the
armature deforms: a body's mesh). Where the bases cannot be told so, or turn out otherwise once Blender evaluates
them, the chains below are solved level by level as before; either way every tip is where Blender shows it."""
import pytest

from rigs import readout
from test_chains import select_tips

FINGERS = ("f_index.03.L", "thumb.03.L", "f_middle.03.L", "f_ring.03.L", "f_pinky.03.L")


def _free(obj, chains):
    """The finger controls under the hand's (an Empty each, parented to the hand chain's target)."""
    hand_target = chains["hand.L"].target
    for tip in FINGERS:
        target = chains[tip].target
        world = target.matrix_world.copy()
        target.parent = hand_target
        target.matrix_world = world


def _on_the_palm(obj, chains):
    """The finger controls parented to the palm bones: they move with the hand chain's pose."""
    for tip in FINGERS:
        target, palm = chains[tip].target, obj.pose.bones[tip].parent.parent.parent.name
        world = target.matrix_world.copy()
        target.parent, target.parent_type, target.parent_bone = obj, "BONE", palm
        target.matrix_world = world


def _on_the_palm_constrained(obj, chains):
    """As _on_the_palm, and a Limit Location (limiting nothing) on each control: Blender places it through a
    constraint."""
    _on_the_palm(obj, chains)
    for tip in FINGERS:
        chains[tip].target.constraints.new("LIMIT_LOCATION")


def _palm_constrained(obj, chains):
    """As _free, and a Limit Rotation (limiting nothing) on each palm bone: Blender poses it through a constraint."""
    _free(obj, chains)
    for tip in FINGERS:
        palm = obj.pose.bones[tip].parent.parent.parent
        if palm.name.startswith("palm") and not palm.constraints:
            palm.constraints.new("LIMIT_ROTATION")


def _palm_driven(obj, chains):
    """As _free, and a driver (a constant 0) on each palm bone's X location: Blender poses it through a driver."""
    _free(obj, chains)
    for tip in FINGERS:
        palm = obj.pose.bones[tip].parent.parent.parent
        if palm.name.startswith("palm") and not (obj.animation_data and obj.animation_data.drivers.find(
                palm.path_from_id("location"), index=0)):
            palm.driver_add("location", 0).driver.expression = "0"


def _hand_and_fingers(bpy, controls, spine=False):
    """Rigify's human metarig with live chains on the left hand and its five fingers (Chains from Selected; with
    ``spine``, on the spine too, above the arm), each finger's (and the spine's) target drawn a tenth of the way in
    toward its chain's base (a straight chain's tip is at its full reach), set up by ``controls``."""
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.object
    select_tips(bpy, obj, ["hand.L", *FINGERS] + (["spine.003"] if spine else []))
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    chains = {chain.tip_bone: chain for chain in obj.blender_ik.chains}
    for tip in FINGERS + (("spine.003",) if spine else ()):
        base = obj.matrix_world @ obj.pose.bones[tip].parent.parent.head
        target = chains[tip].target
        target.location = target.location + 0.1 * (base - target.matrix_world.translation)
    bpy.context.view_layer.update()
    controls(obj, chains)
    for chain in chains.values():
        chain.live = True
    bpy.context.view_layer.update()
    return obj, chains


def _drag(bpy, chains, step):
    """Move and turn the hand's target a little, as a drag does, and let Blender update."""
    target = chains["hand.L"].target
    target.location.x -= 0.01
    target.location.z += 0.005 * (-1) ** step
    target.rotation_euler.y += 0.05
    bpy.context.view_layer.update()


def _on_targets(obj, chains):
    """Every chain's tip where Blender shows it, on its target, and its read-out saying so."""
    for tip, chain in chains.items():
        miss = ((obj.matrix_world @ obj.pose.bones[tip].tail) - chain.target.matrix_world.translation).length
        assert miss < 1e-5 and readout(obj, chain.name).status == "REACHED", (tip, miss, readout(obj, chain.name))


@pytest.fixture
def evaluations(monkeypatch):
    """How many times Live had Blender evaluate the scene (``calls``), counted from 0 at ``reset()``."""
    from blender_ik_addon import live

    class Count:
        calls = 0

        def reset(self):
            Count.calls = 0

    real = live.evaluate_now

    def counted():
        Count.calls += 1
        real()

    monkeypatch.setattr(live, "evaluate_now", counted)
    return Count()


@pytest.mark.parametrize("controls, once", [(_free, True), (_on_the_palm, True), (_on_the_palm_constrained, False),
                                            (_palm_constrained, False), (_palm_driven, False)])
def test_chains_below_a_moving_chain_follow_it_in_one_evaluation_where_their_bases_can_be_told(
        blender, evaluations, controls, once):
    """A hand's target dragged: its five finger chains hang below it. Their controls under the hand's control, or
    parented to the palm bones (which the hand's pose moves), nothing between but bones that follow plainly: one
    evaluation an update (there were two, one a level, each re-evaluating a skinned body: 70.6 against 37.2 ms on a
    40,000-vertex one). A constraint on the controls or on the palm, or a driver on the palm: solved level by level,
    as before. Every tip on its target, as Blender shows it."""
    bpy = blender
    obj, chains = _hand_and_fingers(bpy, controls)
    _on_targets(obj, chains)
    for step in range(4):
        evaluations.reset()
        _drag(bpy, chains, step)
        assert (evaluations.calls == 1) == once, evaluations.calls
        _on_targets(obj, chains)


def test_three_levels_follow_the_spine_in_one_evaluation(blender, evaluations):
    """The spine's target dragged, the arm's chain below the spine (through the shoulder), the fingers' below the
    hand's: three levels, solved on bases told from the poses above, in one evaluation an update."""
    bpy = blender
    obj, chains = _hand_and_fingers(bpy, _free, spine=True)
    _on_targets(obj, chains)
    target = chains["spine.003"].target
    for step in range(4):
        evaluations.reset()
        target.location.x += 0.01
        target.location.y -= 0.005 * (-1) ** step
        bpy.context.view_layer.update()
        assert evaluations.calls == 1, evaluations.calls
        _on_targets(obj, chains)


def test_a_base_told_wrong_is_caught_once_blender_evaluates_it(blender, evaluations, monkeypatch):
    """Whatever tells a base wrongly (here a millimetre off, on purpose) is caught by comparing it with the base Blender
    evaluates: those chains are put back and solved again on Blender's, and every tip lands on its target."""
    from blender_ik_addon import live
    bpy = blender
    obj, chains = _hand_and_fingers(bpy, _free)
    real = live.predicted_base

    def off(chain, posed, driven):
        rows = real(chain, posed, driven)
        if rows is None:
            return None
        rows = [list(row) for row in rows]
        rows[0][3] += 1e-3
        return rows

    monkeypatch.setattr(live, "predicted_base", off)
    for step in range(3):
        evaluations.reset()
        _drag(bpy, chains, step)
        assert evaluations.calls > 1
        _on_targets(obj, chains)


def test_a_goal_the_chain_above_moves_through_geometry_is_solved_level_by_level(blender, evaluations):
    """A finger's target hung from a cuff a Hook on the hand shapes: telling its base from the hand's pose cannot
    foresee where the cuff takes the target. Found out once Blender evaluates, the fingers are solved again level by
    level, on the target where the cuff put it; after that first time they are not told again (each update would put
    them back and evaluate once more than before), and every tip is on its target."""
    from rigs import hang_on_hooked_cuff
    bpy = blender
    obj, chains = _hand_and_fingers(bpy, _free)
    cuffed = chains[FINGERS[0]].target
    world = cuffed.matrix_world.copy()
    cuffed.parent = None  # (hung from the cuff instead of the hand's control, where it is)
    cuffed.matrix_world = world
    hang_on_hooked_cuff(bpy, obj, cuffed, "hand.L")
    bpy.context.view_layer.update()
    calls = []
    for step in range(4):
        evaluations.reset()
        _drag(bpy, chains, step)
        calls.append(evaluations.calls)
        _on_targets(obj, chains)
    assert max(calls[1:]) <= 3, calls  # level by level, as before the bases were told: no put-back evaluation


def test_the_chains_below_a_refused_one_are_solved_on_the_pose_put_back(blender, monkeypatch):
    """When Blender does not show the hand's chain as solved (here its self-check made to refuse it), its pose is put
    back: the fingers solved on its new pose are solved again on the one put back, and land on their targets."""
    from blender_ik_addon import live
    from blender_ik_addon.chain import ChainError
    bpy = blender
    obj, chains = _hand_and_fingers(bpy, _free)
    real = live.verify_pose

    def refuse_the_hand(chain, solution, *args, **kwargs):
        if chain.names[2] == "hand.L":
            raise ChainError("refused for the test; nothing was changed")
        return real(chain, solution, *args, **kwargs)

    monkeypatch.setattr(live, "verify_pose", refuse_the_hand)
    hand_before = obj.pose.bones["hand.L"].matrix.copy()
    _drag(bpy, chains, 0)
    assert readout(obj, chains["hand.L"].name).status == "ERROR"
    assert (obj.pose.bones["hand.L"].matrix.translation - hand_before.translation).length < 1e-6  # put back
    _on_targets(obj, {tip: chains[tip] for tip in FINGERS})
