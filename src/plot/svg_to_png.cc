#include "plot/svg_to_png.h"

#include <cmath>
#include <memory>

#include <cairo.h>
#include <librsvg/rsvg.h>

#include "trib/core/error.h"

namespace trib::plot {

namespace {

// RAII owners of the C libraries' objects.
struct GObjectUnref {
  void operator()(void* p) const { g_object_unref(p); }
};
struct SurfaceDestroy {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct CairoDestroy {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};
struct ErrorFree {
  void operator()(GError* e) const { g_error_free(e); }
};

std::string message_of(GError* raw) {
  std::unique_ptr<GError, ErrorFree> error(raw);
  return error ? error->message : "unknown error";
}

}  // namespace

void svg_to_png(const std::string& svg, const std::string& path) {
  GError* error = nullptr;
  std::unique_ptr<RsvgHandle, GObjectUnref> handle(
      rsvg_handle_new_from_data(reinterpret_cast<const guint8*>(svg.data()), svg.size(), &error));
  TRIB_CHECK(handle != nullptr, InvalidArgument, "cannot read the SVG to rasterize for {}: {}", path,
             message_of(error));
  double width = 0, height = 0;
  TRIB_CHECK(rsvg_handle_get_intrinsic_size_in_pixels(handle.get(), &width, &height) && width >= 1 && height >= 1,
             InvalidArgument, "the SVG for {} has no width and height in pixels", path);
  std::unique_ptr<cairo_surface_t, SurfaceDestroy> surface(
      cairo_image_surface_create(CAIRO_FORMAT_ARGB32, int(std::ceil(width)), int(std::ceil(height))));
  TRIB_CHECK(cairo_surface_status(surface.get()) == CAIRO_STATUS_SUCCESS, IoError, "cannot make a {}x{} image for {}",
             width, height, path);
  std::unique_ptr<cairo_t, CairoDestroy> cr(cairo_create(surface.get()));
  const RsvgRectangle viewport{0, 0, width, height};
  TRIB_CHECK(rsvg_handle_render_document(handle.get(), cr.get(), &viewport, &error), InvalidArgument,
             "cannot draw the SVG for {}: {}", path, message_of(error));
  const cairo_status_t written = cairo_surface_write_to_png(surface.get(), path.c_str());
  TRIB_CHECK(written == CAIRO_STATUS_SUCCESS, IoError, "cannot write {}: {}", path, cairo_status_to_string(written));
}

}  // namespace trib::plot
