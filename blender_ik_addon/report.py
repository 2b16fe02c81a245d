"""Leaf: how results are put into words (frame ranges, distances, the one-line summaries)."""
import bpy


def frame_span(first, last):
    """'3-5', or '-30 to -1' where a hyphen would read as a minus sign."""
    if first == last:
        return f"{first}"
    return f"{first} to {last}" if first < 0 or last < 0 else f"{first}-{last}"


def compact_frames(frames, limit=None):
    """[3, 4, 5, 9, 11, 12] -> '3-5, 9, 11-12'; with ``limit``, cut to about that many characters."""
    parts = []
    frames = [int(f) for f in frames]
    start = previous = None
    for frame in frames + [None]:
        if start is not None and (frame is None or frame != previous + 1):
            parts.append(frame_span(start, previous))
            start = None
        if frame is not None and start is None:
            start = frame
        previous = frame
    text = ", ".join(parts)
    if limit is not None and len(text) > limit:
        text = text[:limit - 3].rsplit(",", 1)[0] + ", ..."
    return text


# Below the smallest unit bpy.utils.units.to_string names (it reads "0 m" under 5 nm): the distance in a smaller one.
_TINY_UNITS = {"METRIC": (1e-9, "nm"), "IMPERIAL": (2.54e-8, "µin")}


def distance_text(scene, armature, distance):
    """An armature-space distance in the scene's units, as the user sees it in the world: times the Unit Scale, as
    Blender shows lengths when a unit system is set (at 0.01, 30 units show as 30 cm), and never "0" when it is not."""
    units = scene.unit_settings
    value = distance * armature.matrix_world.median_scale
    if units.system == "NONE":  # plain numbers, the Unit Scale unused (to_string keeps six decimals: 2.4e-06 read 0.000002)
        return f"{value:.3g}"
    value *= units.scale_length
    text = bpy.utils.units.to_string(units.system, "LENGTH", value)
    if value and not any(digit in text for digit in "123456789"):
        factor, symbol = _TINY_UNITS[units.system]
        text = f"{value / factor:.3g} {symbol}"
    return text
