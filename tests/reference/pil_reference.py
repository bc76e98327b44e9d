#!/usr/bin/python3
"""What Pillow and Hugging Face's image processors make of generated test images, for tests/cpp/image_test.cpp.

    /usr/bin/python3 tests/reference/pil_reference.py < jobs.json > reference.json

Reads a JSON list of jobs, each {width, height, pattern, seed} and either
- resize_only: {width, height, resample}: Image.resize((width, height), resample, reducing_gap=None) of the image
  converted to RGB; prints {"rgb": hex of the [height, width, 3] bytes};
- preprocess: {...preprocessor_config.json's fields...}: the processor's preprocess as transformers 4.x runs it
  (its Pillow + numpy path, written out below as transformers' image_transforms.py and the ViT, DeiT, BiT and CLIP
  processors' __init__ and preprocess have it, since transformers is not installed); prints {"pixels": hex of the
  [3, H, W] float32 values, little-endian, "resized_width", "resized_height"}.
The one departure: the image is read as channels-last explicitly. transformers infers the layout, and takes an
image 1 or 3 pixels high for channels-first.

Patterns (image_test.cpp makes the same bytes), pixel (x, y) as R, G, B, A; `lcg` is the 32-bit LCG
s = s * 1664525 + 1013904223 mod 2^32 from s = seed, each draw its top byte, drawn row by row:
- gradient: x·255 // max(w-1, 1), y·255 // max(h-1, 1), (x+y)·255 // max(w+h-2, 1), 255;
- noise: three draws, 255;
- checker: squares of 1 + seed % 5 pixels, v = 255 on odd squares else 0: v, 255 - v, v, 255;
- grey: one draw v: v, v, v, 255;
- alpha: four draws (the alpha varies, and must be dropped, not composited).
"""
import functools
import json
import math
import sys

import numpy as np
import PIL
from PIL import Image

# ---------------------------------------------------------------------------------------------------------------
# Test images


def draws(seed, count):
    s = seed & 0xFFFFFFFF
    out = bytearray(count)
    for i in range(count):
        s = (s * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = s >> 24
    return np.frombuffer(bytes(out), dtype=np.uint8)


@functools.lru_cache(maxsize=None)
def make_image(width, height, pattern, seed):
    """[height, width, 4] uint8 RGBA (shared between jobs: read, never written)."""
    y, x = np.mgrid[0:height, 0:width]
    img = np.zeros((height, width, 4), dtype=np.uint8)
    img[..., 3] = 255
    if pattern == "gradient":
        img[..., 0] = x * 255 // max(width - 1, 1)
        img[..., 1] = y * 255 // max(height - 1, 1)
        img[..., 2] = (x + y) * 255 // max(width + height - 2, 1)
    elif pattern == "noise":
        img[..., :3] = draws(seed, width * height * 3).reshape(height, width, 3)
    elif pattern == "checker":
        cell = 1 + seed % 5
        v = np.where(((x // cell + y // cell) & 1) == 1, 255, 0)
        img[..., 0] = v
        img[..., 1] = 255 - v
        img[..., 2] = v
    elif pattern == "grey":
        v = draws(seed, width * height).reshape(height, width)
        img[..., 0] = img[..., 1] = img[..., 2] = v
    elif pattern == "alpha":
        img[...] = draws(seed, width * height * 4).reshape(height, width, 4)
    else:
        raise ValueError(f"unknown pattern {pattern}")
    return img


def to_rgb(rgba):
    """PIL's convert("RGB"): alpha dropped."""
    height, width = rgba.shape[:2]
    return Image.frombytes("RGBA", (width, height), rgba.tobytes()).convert("RGB")


# ---------------------------------------------------------------------------------------------------------------
# transformers' image processors (4.x), their Pillow path

IMAGENET_STANDARD_MEAN = [0.5, 0.5, 0.5]
IMAGENET_STANDARD_STD = [0.5, 0.5, 0.5]
OPENAI_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
OPENAI_CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

VALID_SIZE_DICT_KEYS = ({"height", "width"}, {"shortest_edge"}, {"shortest_edge", "longest_edge"}, {"longest_edge"})


def get_size_dict(size, default_to_square=True):
    """image_processing_utils.get_size_dict (no max_size, height_width_order=True)."""
    if not isinstance(size, dict):
        if isinstance(size, int) and default_to_square:
            size = {"height": size, "width": size}
        elif isinstance(size, int):
            size = {"shortest_edge": size}
        elif isinstance(size, (tuple, list)):
            size = {"height": size[0], "width": size[1]}
        else:
            raise ValueError(f"Could not convert size input to size dict: {size}")
    if set(size.keys()) not in VALID_SIZE_DICT_KEYS:
        raise ValueError(f"size must have one of the following set of keys: {VALID_SIZE_DICT_KEYS}")
    return size


def get_resize_output_image_size(image, size, default_to_square=True):
    """image_transforms.get_resize_output_image_size (no max_size), for a channels-last image."""
    if isinstance(size, (tuple, list)):
        if len(size) == 2:
            return tuple(size)
        size = size[0]
    if default_to_square:
        return (size, size)
    height, width = image.shape[:2]
    short, long = (width, height) if width <= height else (height, width)
    requested_new_short = size
    new_short, new_long = requested_new_short, int(requested_new_short * long / short)
    return (new_long, new_short) if width <= height else (new_short, new_long)


def resize(image, size, resample):
    """image_transforms.resize: to_pil_image of the uint8 array, PIL's resize, back to numpy."""
    height, width = size
    resized = Image.fromarray(image).resize((width, height), resample=resample, reducing_gap=None)
    return np.array(resized)


def center_crop(image, size):
    """image_transforms.center_crop, for a channels-last image (cropped as (C, H, W) as there)."""
    image = image.transpose(2, 0, 1)
    orig_height, orig_width = image.shape[-2:]
    crop_height, crop_width = int(size[0]), int(size[1])
    top = (orig_height - crop_height) // 2
    bottom = top + crop_height
    left = (orig_width - crop_width) // 2
    right = left + crop_width
    if top >= 0 and bottom <= orig_height and left >= 0 and right <= orig_width:
        return image[..., top:bottom, left:right].transpose(1, 2, 0)
    new_height = max(crop_height, orig_height)
    new_width = max(crop_width, orig_width)
    new_image = np.zeros_like(image, shape=image.shape[:-2] + (new_height, new_width))
    top_pad = math.ceil((new_height - orig_height) / 2)
    bottom_pad = top_pad + orig_height
    left_pad = math.ceil((new_width - orig_width) / 2)
    right_pad = left_pad + orig_width
    new_image[..., top_pad:bottom_pad, left_pad:right_pad] = image
    top += top_pad
    bottom += top_pad
    left += left_pad
    right += left_pad
    new_image = new_image[..., max(0, top) : min(new_height, bottom), max(0, left) : min(new_width, right)]
    return new_image.transpose(1, 2, 0)


def rescale(image, scale):
    """image_transforms.rescale: float64 product, then float32."""
    return (image.astype(np.float64) * scale).astype(np.float32)


def normalize(image, mean, std):
    """image_transforms.normalize, channels-last."""
    if not np.issubdtype(image.dtype, np.floating):
        image = image.astype(np.float32)
    num_channels = image.shape[-1]
    mean = mean if isinstance(mean, list) else [mean] * num_channels
    std = std if isinstance(std, list) else [std] * num_channels
    if len(mean) != num_channels or len(std) != num_channels:
        raise ValueError("mean and std must have one value per channel")
    mean = np.array(mean, dtype=image.dtype)
    std = np.array(std, dtype=image.dtype)
    return (image - mean) / std


def pick(config, key, default):
    value = config.get(key)
    return value if value is not None else default


def processor(config):
    """(class name, its effective settings) as the class's __init__ and preprocess set them from the file."""
    name = config.get("image_processor_type") or config.get("feature_extractor_type") or "ViTImageProcessor"
    name = name.replace("FeatureExtractor", "ImageProcessor")
    for suffix in ("Fast", "Pil"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name == "ViTImageProcessor":
        size = get_size_dict(pick(config, "size", {"height": 224, "width": 224}))
        return name, dict(
            do_resize=pick(config, "do_resize", True),
            size=size,
            resample=pick(config, "resample", 2),
            do_center_crop=False,  # ViT's preprocess has no crop
            crop_size=None,
            do_rescale=pick(config, "do_rescale", True),
            rescale_factor=pick(config, "rescale_factor", 1 / 255),
            do_normalize=pick(config, "do_normalize", True),
            image_mean=pick(config, "image_mean", IMAGENET_STANDARD_MEAN),
            image_std=pick(config, "image_std", IMAGENET_STANDARD_STD),
        )
    if name == "DeiTImageProcessor":
        return name, dict(
            do_resize=pick(config, "do_resize", True),
            size=get_size_dict(pick(config, "size", {"height": 256, "width": 256})),
            resample=pick(config, "resample", 3),
            do_center_crop=pick(config, "do_center_crop", True),
            crop_size=get_size_dict(pick(config, "crop_size", {"height": 224, "width": 224})),
            do_rescale=pick(config, "do_rescale", True),
            rescale_factor=pick(config, "rescale_factor", 1 / 255),
            do_normalize=pick(config, "do_normalize", True),
            image_mean=pick(config, "image_mean", IMAGENET_STANDARD_MEAN),
            image_std=pick(config, "image_std", IMAGENET_STANDARD_STD),
        )
    if name in ("BitImageProcessor", "CLIPImageProcessor"):
        return name, dict(
            do_resize=pick(config, "do_resize", True),
            size=get_size_dict(pick(config, "size", {"shortest_edge": 224}), default_to_square=False),
            resample=pick(config, "resample", 3),
            do_center_crop=pick(config, "do_center_crop", True),
            crop_size=get_size_dict(pick(config, "crop_size", {"height": 224, "width": 224}), default_to_square=True),
            do_rescale=pick(config, "do_rescale", True),
            rescale_factor=pick(config, "rescale_factor", 1 / 255),
            do_normalize=pick(config, "do_normalize", True),
            image_mean=pick(config, "image_mean", OPENAI_CLIP_MEAN),
            image_std=pick(config, "image_std", OPENAI_CLIP_STD),
        )
    raise ValueError(f"unsupported processor {name}")


def preprocess(rgba, config):
    name, p = processor(config)
    image = np.array(to_rgb(rgba))  # convert_to_rgb (or, for DeiT and ViT, the RGB image given), to_numpy_array
    if p["do_resize"]:
        size = p["size"]
        if name in ("ViTImageProcessor", "DeiTImageProcessor"):
            if "height" not in size or "width" not in size:
                raise ValueError("The `size` dictionary must contain the keys `height` and `width`.")
            output_size = (size["height"], size["width"])
        else:
            if "shortest_edge" in size:
                output_size = get_resize_output_image_size(image, size["shortest_edge"], default_to_square=False)
            elif "height" in size and "width" in size:
                output_size = get_resize_output_image_size(image, (size["height"], size["width"]))
            else:
                raise ValueError("Size must contain either 'shortest_edge' or 'height' and 'width'.")
        image = resize(image, output_size, p["resample"])
    resized_height, resized_width = image.shape[:2]
    if p["do_center_crop"]:
        crop = p["crop_size"]
        image = center_crop(image, (crop["height"], crop["width"]))
    if p["do_rescale"]:
        image = rescale(image, p["rescale_factor"])
    if p["do_normalize"]:
        image = normalize(image, p["image_mean"], p["image_std"])
    pixels = np.ascontiguousarray(image.transpose(2, 0, 1)).astype("<f4")
    return {"pixels": pixels.tobytes().hex(), "resized_width": resized_width, "resized_height": resized_height}


def run(job):
    rgba = make_image(job["width"], job["height"], job["pattern"], job.get("seed", 0))
    if "resize_only" in job:
        r = job["resize_only"]
        out = to_rgb(rgba).resize((r["width"], r["height"]), resample=r["resample"], reducing_gap=None)
        return {"rgb": out.tobytes().hex()}
    return preprocess(rgba, job["preprocess"])


def main():
    jobs = json.load(sys.stdin)
    json.dump({"pillow": PIL.__version__, "numpy": np.__version__, "results": [run(job) for job in jobs]},
              sys.stdout)


if __name__ == "__main__":
    main()
