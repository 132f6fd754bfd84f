// An SVG rasterized to a PNG file by librsvg (Debian librsvg2-dev) onto a cairo image surface:
// `trib plot --output F.png` draws the same figure as its SVG without a second renderer.
#pragma once

#include <string>

namespace trib::plot {

// Writes `svg` (a whole document with its width and height in pixels) to `path` as a PNG of
// that size. Throws InvalidArgument for a document librsvg cannot read, IoError for a file
// that cannot be written.
void svg_to_png(const std::string& svg, const std::string& path);

}  // namespace trib::plot
