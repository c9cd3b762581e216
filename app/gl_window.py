"""vispy canvases drawn in a native OpenGL window (`QOpenGLWindow`) instead of a `QOpenGLWidget`.

A `QOpenGLWidget` renders into a texture that Qt then composites, with the rest of the
main window, through OpenGL on every frame. Under software OpenGL (Mesa llvmpipe) that
compositing costs about as much CPU as drawing the tree itself: measured on the app at
1200×760 px simulating 10,000 limbs (alternating runs), 28 frames/s and 1.70 cores with
vispy's widget, 37 frames/s and 1.51 cores with this window. A `QOpenGLWindow` draws
straight into its own native window and presents it with one buffer swap;
`QWidget.createWindowContainer` puts it in a layout (`TreeCanvas.widget`).

The class reuses vispy's Qt event handling (`QtBaseCanvasBackend`: mouse, wheel, keys —
the same event types reach a `QWindow`) and replaces only what is specific to the widget.
`install` makes it the canvas class of vispy's PyQt6 application.
"""

from __future__ import annotations

from PyQt6.QtOpenGL import QOpenGLWindow


def install(application) -> None:
    """Make vispy's PyQt6 `application` (a `vispy.app.Application`) create its canvases with
    `GLWindowCanvasBackend` (once; another backend is left alone)."""
    module = application.backend_module
    if application.backend_name.lower() == "pyqt6" and not isinstance(module, _BackendModule):
        application._backend_module = _BackendModule(module)


class _BackendModule:
    """vispy's PyQt6 backend module with its canvas class replaced (vispy's `Canvas` creates
    ``app.backend_module.CanvasBackend(...)``; everything else is vispy's own)."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        if name == "CanvasBackend":
            return GLWindowCanvasBackend
        return getattr(self._module, name)


def _base_backend():
    """vispy's Qt canvas base class (importable only once vispy has selected a Qt backend)."""
    from vispy.app.backends import _qt
    return _qt


class GLWindowCanvasBackend(_base_backend().QtBaseCanvasBackend, QOpenGLWindow):
    """A vispy canvas backend on a `QOpenGLWindow` (see the module docstring)."""

    def _init_specific(self, p, kwargs):
        gl_format = _base_backend()._set_config(p.context.config)
        gl_format.setSwapInterval(1 if p.vsync else 0)
        # Every Qt context shares objects with Qt's global context (vispy's Qt application
        # sets AA_ShareOpenGLContexts), so nothing more is needed for vispy's shared context.
        p.context.shared.add_ref("qt", self)
        QOpenGLWindow.__init__(self, QOpenGLWindow.UpdateBehavior.NoPartialUpdate)
        self.setFormat(gl_format)
        self._initialized = True

    # The QWidget calls vispy's base class makes, on their QWindow equivalents.
    def setMouseTracking(self, enable: bool) -> None:
        """A QWindow always receives mouse moves."""

    def setWindowTitle(self, title: str) -> None:
        self.setTitle(title)

    def devicePixelRatioF(self) -> float:
        return self.devicePixelRatio()

    def _vispy_close(self):
        self.close()

    def _vispy_set_current(self):
        if self._vispy_canvas is not None and self.isValid():
            self.makeCurrent()

    def _vispy_swap_buffers(self):
        """Qt presents the frame itself after `paintGL`."""

    def initializeGL(self):
        if self._vispy_canvas is not None:
            self._vispy_canvas.events.initialize()

    def resizeGL(self, width: int, height: int):
        if self._vispy_canvas is None:
            return
        ratio = self.devicePixelRatio()
        physical = (int(width * ratio), int(height * ratio))
        self._vispy_set_physical_size(*physical)
        self._vispy_canvas.events.resize(size=(self.width(), self.height()),
                                         physical_size=physical)

    def paintGL(self):
        if self._vispy_canvas is None:
            return
        self._vispy_canvas.set_current()
        self._vispy_canvas.events.draw(region=None)
