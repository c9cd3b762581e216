"""Limbs as ray-cast impostors: each limb a lit, tapered, round-ended tube drawn on one
screen-facing quad (two triangles), as molecular viewers draw thousands of bonds.

The vertex shader spans each quad over its limb's silhouette and its antialiased rim; the
fragment shader casts the eye's ray through the pixel, finds where it passes the limb's axis
segment (base → tip) most closely, and from that distance and the radius there (linear from
the base radius to the tip radius) computes

- the pixel's coverage: 1 inside, falling to 0 over one pixel across the silhouette
  (antialiased edges without multisampling, which llvmpipe pays for at every sample);
  a limb thinner than a pixel is drawn one pixel wide at its coverage, as a fading line;
- the point where the ray enters the surface and its normal; round ends (a sphere of the
  end's radius) make smooth joints where a child leaves its parent at an angle.

The depth is the quad's, set one radius in front of the axis (the tube's front surface
where it faces the eye): writing the ray's own depth from the fragment shader turns off
llvmpipe's early depth test and halved the frame rate (docs/performance.md §5).

Colours are lit in the shader: ambient, a sun from above and a little behind the viewer
(fixed in the world, so the tree keeps its light as it is orbited), a soft fill from the
eye, and darker bark where the surface turns away (the tube's roundness).

The per-frame work is two (4N, 3) float32 vertex buffers (each limb's base and tip, once
per quad corner) filled in place from the pose and uploaded; everything else is set when a
tree is set.
"""

from __future__ import annotations

import numpy as np
from vispy import gloo, scene
from vispy.visuals import Visual

# The sun (unit, inertial, toward the light): high, from the viewer's left at the default view.
SUN = np.array([-0.45, -0.55, 0.70]) / np.linalg.norm([-0.45, -0.55, 0.70])
# A quad reaches REACH radii beyond its limb's axis (the silhouette of a tube seen in
# perspective from d spans r·d/sqrt(d² − r²): 1.02 r up to r/d = 0.2) or half a pixel,
# whichever is more, plus RIM_PX pixels for the antialiased edge (the coverage ramp ends half
# a pixel outside the silhouette). The fragments are most of the cost on llvmpipe.
REACH = 1.02
RIM_PX = 0.6

# What the vertex shader hands each fragment: the point on the quad, the limb's base, axis,
# radii and colour (scene coordinates, m).
_VARYINGS = """varying vec3 v_pos;
varying vec3 v_base;
varying vec3 v_axis;
varying vec2 v_radius;
varying vec3 v_color;
"""

_VERTEX = """
uniform vec3 u_eye;        // the camera, scene coordinates (m)
uniform float u_pixel;     // framebuffer pixel size at unit distance from the eye (m per m)
attribute vec3 a_base;
attribute vec3 a_tip;
attribute vec2 a_radius;   // (base, tip) m
attribute vec3 a_color;
attribute vec2 a_corner;   // (0 base | 1 tip, -1 | +1 side)
""" + _VARYINGS + """
void main() {
    vec3 axis = a_tip - a_base;
    vec3 end = mix(a_base, a_tip, a_corner.x);
    vec3 view = u_eye - end;
    float dist = length(view);
    view /= max(dist, 1e-30);
    // side ⟂ axis and view; up: the axis projected on the view plane.
    vec3 side = cross(axis, view);
    if (dot(side, side) < 1e-24 * (dot(axis, axis) + 1e-30)) {
        side = cross(view, abs(view.x) < 0.9 ? vec3(1.0, 0.0, 0.0) : vec3(0.0, 1.0, 0.0));
    }
    side = normalize(side);
    vec3 up = cross(view, side);
    float r = max(a_radius.x, a_radius.y);
    float px = dist * u_pixel;
    float reach = max(REACH * r, 0.5 * px) + RIM_PX * px;
    // The quad stands one radius in front of the axis: its depth is the tube's front surface
    // (a depth written by the fragment shader would cost llvmpipe its early depth test, and
    // half the frame rate).
    vec3 p = end + up * ((2.0 * a_corner.x - 1.0) * reach) + side * (a_corner.y * reach)
             + view * r;
    v_pos = p;
    v_base = a_base;
    v_axis = axis;
    v_radius = a_radius;
    v_color = a_color;
    gl_Position = $transform(vec4(p, 1.0));
}
"""

_FRAGMENT = """
uniform vec3 u_eye;
uniform float u_pixel;
uniform vec3 u_sun;
""" + _VARYINGS + """
void main() {
    vec3 d = normalize(v_pos - u_eye);
    vec3 a = v_axis;
    vec3 w0 = u_eye - v_base;
    // Closest approach of the ray u_eye + t·d and the segment v_base + s·a, s in [0, 1].
    float B = dot(d, a);
    float C = max(dot(a, a), 1e-30);
    float D = dot(d, w0);
    float E = dot(a, w0);
    float den = C - B * B;
    float s = den > 1e-9 * C ? (E - B * D) / den : 0.5;
    s = clamp(s, 0.0, 1.0);
    float t = max(B * s - D, 0.0);
    vec3 on_axis = v_base + s * a;
    vec3 miss = u_eye + t * d - on_axis;
    float delta = length(miss);
    float r = mix(v_radius.x, v_radius.y, s);
    float px = t * u_pixel;
    // Coverage: a limb under a pixel wide is drawn a pixel wide, faded by its width.
    float drawn = max(r, 0.5 * px);
    float alpha = clamp((drawn - delta) / px + 0.5, 0.0, 1.0) * (r / drawn);
    if (alpha < 0.004) {
        discard;
    }
    // Where the ray enters: back along it by the half chord (a round end is a sphere; the
    // body a cylinder, whose chord along the ray is longer by 1/sin of the ray's angle).
    float half_chord = sqrt(max(drawn * drawn - delta * delta, 0.0));
    float sine = sqrt(max(1.0 - B * B / C, 0.04));
    bool body = s > 0.0 && s < 1.0;
    vec3 hit = u_eye + (t - half_chord / (body ? sine : 1.0)) * d;
    // Shaded as the tube's body even on the round ends, so that joints show no seam.
    vec3 normal = hit - (v_base + (dot(hit - v_base, a) / C) * a);
    float n_len = length(normal);
    normal = n_len > 0.0 ? normal / n_len : -d;
    // Light: ambient, the sun, a fill from the eye, and the tube's roundness.
    float facing = max(dot(normal, -d), 0.0);
    float sun = max(dot(normal, u_sun), 0.0);
    float light = 0.30 + 0.62 * sun + 0.28 * facing;
    float shade = 0.78 + 0.22 * facing;
    vec3 color = v_color * light * shade;
    gl_FragColor = vec4(min(color, vec3(1.0)), alpha);
}
"""

# Quad corners (end, side) and the two triangles of each quad.
_CORNERS = np.array([[0.0, -1.0], [0.0, 1.0], [1.0, 1.0], [1.0, -1.0]], dtype=np.float32)
_QUAD_FACES = np.array([0, 1, 2, 0, 2, 3], dtype=np.uint32)


def eye_and_pixel(scene_to_render, scene_to_framebuffer, centre: np.ndarray
                  ) -> tuple[np.ndarray, float]:
    """(the camera's position (3,) in scene coordinates, one framebuffer pixel's size at unit
    distance from it) for vispy transforms of a perspective camera looking at `centre`.

    The eye is the point that every projection ray passes through: where clip x, y and w all
    vanish (the null vector of those three rows of the scene → clip matrix).
    """
    matrix = np.asarray(scene_to_render.map(np.eye(4)), dtype=float).T  # column k: M @ e_k
    rows = matrix[[0, 1, 3]]
    null = np.linalg.svd(rows)[2][-1]
    if abs(null[3]) < 1e-12:  # an orthographic camera: eye at infinity
        return np.asarray(centre, dtype=float) + 1e6 * null[:3], 1e-6
    eye = null[:3] / null[3]
    centre = np.asarray(centre, dtype=float)
    distance = max(float(np.linalg.norm(centre - eye)), 1e-9)
    forward = (centre - eye) / distance
    across = np.cross(forward, [0.0, 0.0, 1.0])
    if np.linalg.norm(across) < 1e-6:
        across = np.cross(forward, [1.0, 0.0, 0.0])
    across /= np.linalg.norm(across)
    step = 1e-3 * distance
    ends = np.asarray(scene_to_framebuffer.map(np.array([centre, centre + step * across])),
                      dtype=float)
    ends = ends[:, :2] / ends[:, 3:4]
    pixels = max(float(np.linalg.norm(ends[1] - ends[0])), 1e-12)
    return eye, step / pixels / distance


class LimbImpostorsVisual(Visual):
    """N limbs, each one quad of four vertices, ray-cast in the fragment shader."""

    def __init__(self):
        super().__init__(vcode=_VERTEX.replace("REACH", f"{REACH:.3f}")
                         .replace("RIM_PX", f"{RIM_PX:.3f}"), fcode=_FRAGMENT)
        self._draw_mode = "triangles"
        self.shared_program["u_sun"] = SUN.astype(np.float32)
        self.shared_program["u_eye"] = (0.0, -10.0, 0.0)
        self.shared_program["u_pixel"] = 1e-3
        self._base = gloo.VertexBuffer(np.zeros((4, 3), dtype=np.float32))
        self._tip = gloo.VertexBuffer(np.zeros((4, 3), dtype=np.float32))
        self._indices = None
        self._base_vertices = np.zeros((1, 4, 3), dtype=np.float32)
        self._tip_vertices = np.zeros((1, 4, 3), dtype=np.float32)
        self._bounds = np.zeros((2, 3))
        self._centre = np.zeros(3)
        self.set_gl_state("translucent", depth_test=True, cull_face=False,
                          blend_func=("src_alpha", "one_minus_src_alpha", "one",
                                      "one_minus_src_alpha"))

    def set_limbs(self, radius: np.ndarray, radius_tip: np.ndarray, colors: np.ndarray,
                  base: np.ndarray, tip: np.ndarray) -> None:
        """Size the buffers for N limbs: radius, radius_tip (N,) m; colors (N, 3 or 4) RGB(A)
        0..1 (the alpha is not used); base, tip (N, 3) m, scene coordinates."""
        n = len(radius)
        self._base_vertices = np.zeros((n, 4, 3), dtype=np.float32)
        self._tip_vertices = np.zeros((n, 4, 3), dtype=np.float32)
        radii = np.repeat(np.stack([radius, radius_tip], axis=1), 4, axis=0)
        program = self.shared_program
        program["a_base"] = self._base
        program["a_tip"] = self._tip
        program["a_radius"] = gloo.VertexBuffer(radii.astype(np.float32))
        program["a_color"] = gloo.VertexBuffer(
            np.repeat(np.asarray(colors, dtype=np.float32)[:, :3], 4, axis=0))
        program["a_corner"] = gloo.VertexBuffer(np.tile(_CORNERS, (n, 1)))
        faces = _QUAD_FACES[None, :] + 4 * np.arange(n, dtype=np.uint32)[:, None]
        self._indices = gloo.IndexBuffer(faces.reshape(-1))
        self._index_buffer = self._indices
        points = np.concatenate([base, tip])
        reach = float(np.max(radius)) if n else 0.0
        self._bounds = np.array([points.min(axis=0) - reach, points.max(axis=0) + reach])
        self._centre = self._bounds.mean(axis=0)
        self.set_pose(base, tip)

    def set_pose(self, base: np.ndarray, tip: np.ndarray) -> None:
        """Move the limbs to base → tip ((N, 3) m, scene coordinates); allocates nothing."""
        self._base_vertices[:] = base[:, None, :]
        self._tip_vertices[:] = tip[:, None, :]
        self._base.set_data(self._base_vertices.reshape(-1, 3))
        self._tip.set_data(self._tip_vertices.reshape(-1, 3))
        self.update()

    def _prepare_transforms(self, view):
        view.view_program.vert["transform"] = view.get_transform()

    def _prepare_draw(self, view):
        # The camera moves without telling the visual: the eye is found again every draw.
        if self._indices is None:
            return False
        eye, pixel = eye_and_pixel(view.get_transform(),
                                   view.get_transform("visual", "framebuffer"), self._centre)
        view.view_program["u_eye"] = eye.astype(np.float32)
        view.view_program["u_pixel"] = float(pixel)
        return True

    def _compute_bounds(self, axis, view):
        """The rest pose's bounds, radii included (for the camera's framing only)."""
        return self._bounds[0, axis], self._bounds[1, axis]


LimbImpostors = scene.visuals.create_visual_node(LimbImpostorsVisual)
