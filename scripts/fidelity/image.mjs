// Pictures: PNG in and out, luminance, SSIM, the side-by-side and the difference map.

import { PNG } from "pngjs";

/** A decoded PNG as { width, height, data: RGBA bytes }, composited on white. */
export function decode(buf) {
  const png = PNG.sync.read(buf);
  const d = png.data;
  for (let i = 0; i < d.length; i += 4) {
    const a = d[i + 3] / 255;
    if (a < 1) {
      for (let c = 0; c < 3; c++) d[i + c] = Math.round(d[i + c] * a + 255 * (1 - a));
      d[i + 3] = 255;
    }
  }
  return { width: png.width, height: png.height, data: d };
}

export function encode(img) {
  const png = new PNG({ width: img.width, height: img.height, colorType: 2 });
  const out = png.data;
  out.set(img.data);
  return PNG.sync.write(png, { colorType: 2, deflateLevel: 9 });
}

/** The picture cropped or padded (white) to width×height, from the top-left. */
export function fit(img, width, height) {
  if (img.width === width && img.height === height) return img;
  const data = Buffer.alloc(width * height * 4, 255);
  for (let y = 0; y < Math.min(height, img.height); y++) {
    const row = Math.min(width, img.width) * 4;
    img.data.copy(data, y * width * 4, y * img.width * 4, y * img.width * 4 + row);
  }
  return { width, height, data };
}

/** Luma (ITU-R BT.601: 0.299 R + 0.587 G + 0.114 B), 0 to 255. */
export function luma(img) {
  const n = img.width * img.height;
  const y = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const o = i * 4;
    y[i] = 0.299 * img.data[o] + 0.587 * img.data[o + 1] + 0.114 * img.data[o + 2];
  }
  return y;
}

/** A normalised Gaussian kernel of `size` taps. */
function gaussian(size, sigma) {
  const k = new Float32Array(size);
  const c = (size - 1) / 2;
  let sum = 0;
  for (let i = 0; i < size; i++) {
    k[i] = Math.exp(-((i - c) ** 2) / (2 * sigma * sigma));
    sum += k[i];
  }
  for (let i = 0; i < size; i++) k[i] /= sum;
  return k;
}

/** Separable 'valid' filtering: the output is (w - size + 1) × (h - size + 1). */
function filter(src, w, h, k) {
  const size = k.length;
  const ow = w - size + 1;
  const oh = h - size + 1;
  const tmp = new Float32Array(ow * h);
  for (let y = 0; y < h; y++) {
    const row = y * w;
    for (let x = 0; x < ow; x++) {
      let s = 0;
      for (let i = 0; i < size; i++) s += src[row + x + i] * k[i];
      tmp[y * ow + x] = s;
    }
  }
  const out = new Float32Array(ow * oh);
  for (let y = 0; y < oh; y++) {
    for (let x = 0; x < ow; x++) {
      let s = 0;
      for (let i = 0; i < size; i++) s += tmp[(y + i) * ow + x] * k[i];
      out[y * ow + x] = s;
    }
  }
  return { data: out, width: ow, height: oh };
}

/**
 * Mean SSIM (Wang, Bovik, Sheikh, Simoncelli 2004) of two same-size pictures, on luma, with
 * the paper's parameters: an 11×11 Gaussian window of σ = 1.5, K1 = 0.01, K2 = 0.03, L = 255,
 * over every window wholly inside the picture ('valid'), at full resolution (no downsampling).
 * Answers the mean and the per-window map.
 */
export function ssim(a, b) {
  const w = a.width;
  const h = a.height;
  const x = luma(a);
  const y = luma(b);
  const n = w * h;
  const xx = new Float32Array(n);
  const yy = new Float32Array(n);
  const xy = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    xx[i] = x[i] * x[i];
    yy[i] = y[i] * y[i];
    xy[i] = x[i] * y[i];
  }
  const k = gaussian(11, 1.5);
  const mx = filter(x, w, h, k);
  const my = filter(y, w, h, k).data;
  const sxx = filter(xx, w, h, k).data;
  const syy = filter(yy, w, h, k).data;
  const sxy = filter(xy, w, h, k).data;
  const C1 = (0.01 * 255) ** 2;
  const C2 = (0.03 * 255) ** 2;
  const map = new Float32Array(mx.data.length);
  let sum = 0;
  for (let i = 0; i < map.length; i++) {
    const ux = mx.data[i];
    const uy = my[i];
    const vx = sxx[i] - ux * ux;
    const vy = syy[i] - uy * uy;
    const cov = sxy[i] - ux * uy;
    const s = ((2 * ux * uy + C1) * (2 * cov + C2)) / ((ux * ux + uy * uy + C1) * (vx + vy + C2));
    map[i] = s;
    sum += s;
  }
  return { mean: sum / map.length, map: { data: map, width: mx.width, height: mx.height } };
}

/** Area-averaged downscale by `k` (< 1). */
export function downscale(img, k) {
  const w = Math.max(1, Math.round(img.width * k));
  const h = Math.max(1, Math.round(img.height * k));
  const data = Buffer.alloc(w * h * 4);
  const sx = img.width / w;
  const sy = img.height / h;
  for (let y = 0; y < h; y++) {
    const y0 = Math.floor(y * sy);
    const y1 = Math.min(img.height, Math.max(y0 + 1, Math.floor((y + 1) * sy)));
    for (let x = 0; x < w; x++) {
      const x0 = Math.floor(x * sx);
      const x1 = Math.min(img.width, Math.max(x0 + 1, Math.floor((x + 1) * sx)));
      const acc = [0, 0, 0];
      let cnt = 0;
      for (let yy = y0; yy < y1; yy++) {
        for (let xx = x0; xx < x1; xx++) {
          const o = (yy * img.width + xx) * 4;
          acc[0] += img.data[o];
          acc[1] += img.data[o + 1];
          acc[2] += img.data[o + 2];
          cnt++;
        }
      }
      const o = (y * w + x) * 4;
      data[o] = Math.round(acc[0] / cnt);
      data[o + 1] = Math.round(acc[1] / cnt);
      data[o + 2] = Math.round(acc[2] / cnt);
      data[o + 3] = 255;
    }
  }
  return { width: w, height: h, data };
}

/** Left and right side by side with a grey gutter, each scaled to fit `maxWidth` in all. */
export function sideBySide(left, right, maxWidth = 1600, gutter = 16) {
  const k = Math.min(1, (maxWidth - gutter) / (left.width + right.width));
  const l = downscale(left, k);
  const r = downscale(right, k);
  const width = l.width + gutter + r.width;
  const height = Math.max(l.height, r.height);
  const data = Buffer.alloc(width * height * 4, 0);
  for (let i = 0; i < width * height; i++) {
    data[i * 4] = 160;
    data[i * 4 + 1] = 160;
    data[i * 4 + 2] = 160;
    data[i * 4 + 3] = 255;
  }
  const blit = (src, ox) => {
    for (let y = 0; y < src.height; y++) src.data.copy(data, (y * width + ox) * 4, y * src.width * 4, (y + 1) * src.width * 4);
  };
  blit(l, 0);
  blit(r, l.width + gutter);
  return { width, height, data };
}

/** Luma difference that counts a pixel as off: well past antialiasing's few levels. */
export const OFF_LUMA = 24;

/** The share of pixels whose luma differs by more than OFF_LUMA. */
export function offShare(a, b) {
  const ya = luma(a);
  const yb = luma(b);
  let off = 0;
  for (let i = 0; i < ya.length; i++) if (Math.abs(ya[i] - yb[i]) > OFF_LUMA) off++;
  return off / ya.length;
}

/** The reference, faded, with the pixels whose luma differs by more than OFF_LUMA in red. */
export function diffPicture(a, b) {
  const ya = luma(a);
  const yb = luma(b);
  const data = Buffer.alloc(a.width * a.height * 4);
  for (let i = 0; i < ya.length; i++) {
    const o = i * 4;
    const d = Math.abs(ya[i] - yb[i]);
    if (d > OFF_LUMA) {
      data[o] = 230;
      data[o + 1] = 30;
      data[o + 2] = 30;
    } else {
      const g = 200 + ya[i] * (55 / 255);
      data[o] = g;
      data[o + 1] = g;
      data[o + 2] = g;
    }
    data[o + 3] = 255;
  }
  return { width: a.width, height: a.height, data };
}
