#!/usr/bin/python3
"""An independent reader of `trib plot`'s PNGs (pypng: Debian python3-png, pure Python, no
libpng or cairo): prints the image's size, then for each box X0,Y0,X1,Y1 (inclusive) how many
of its pixels are not white and their mean colour.

    read_png.py FILE.png [X0,Y0,X1,Y1 ...]
    -> size W H
       box X0,Y0,X1,Y1 inked N mean R G B
"""
import sys

import png


def main():
    width, height, rows, _ = png.Reader(filename=sys.argv[1]).asRGBA8()
    pixels = [bytes(r) for r in rows]
    print(f"size {width} {height}")
    for box in sys.argv[2:]:
        x0, y0, x1, y1 = (int(v) for v in box.split(","))
        inked, total = 0, [0, 0, 0]
        for y in range(y0, y1 + 1):
            for x in range(x0, x1 + 1):
                r, g, b, a = pixels[y][4 * x:4 * x + 4]
                if a > 0 and min(r, g, b) < 235:
                    inked += 1
                    total = [total[0] + r, total[1] + g, total[2] + b]
        mean = [t // inked if inked else 0 for t in total]
        print(f"box {box} inked {inked} mean {mean[0]} {mean[1]} {mean[2]}")


if __name__ == "__main__":
    main()
