//! `cargo xtask bench --suite networks`: convolution layers of well-known
//! networks at training batch sizes, for speed on the layers users run rather
//! than on the bench suite (issue 27). One row per distinct layer shape;
//! repeated blocks appear once. Channels, strides and pads as in the
//! reference implementations (torchvision, timm, wav2vec 2.0's feature
//! encoder, the 2-D and 3-D U-Nets of their papers, YOLOv5, ShuffleNetV2,
//! Stable Diffusion's U-Net, DeepLabV3, DenseNet-121).

use convgrad_types::ConvProblem;

/// One layer: network, layer name, CK's problem arguments.
pub struct Layer {
    /// The network, e.g. `resnet50`.
    pub net: &'static str,
    /// The layer, e.g. `layer2.0.conv2`.
    pub name: String,
    /// The problem.
    pub p: ConvProblem,
}

/// A 2-D layer: batch `n`, groups `g`, channels per group in `c` and out `k`,
/// square filter `f`, square input `hw`, stride `s`, pad `pad`.
fn l2(net: &'static str, name: &str, (n, g, c, k): (usize, usize, usize, usize), f: usize, hw: usize, s: usize, pad: usize) -> Layer {
    let p = ConvProblem::from_ck_args(&[2, g, n, k, c, f, f, hw, hw, s, s, 1, 1, pad, pad, pad, pad])
        .unwrap_or_else(|e| panic!("network layer {net} {name}: {e}"));
    Layer { net, name: name.into(), p }
}

/// Depthwise 2-D layer of `ch` channels.
fn depthwise(net: &'static str, name: &str, n: usize, ch: usize, f: usize, hw: usize, s: usize) -> Layer {
    l2(net, name, (n, ch, 1, 1), f, hw, s, f / 2)
}

/// Dense 2-D layers of `net`, batch `n`, square filter `f`, stride 1, pad
/// `f / 2` (the input's size kept): `(name, C, K, Hi = Wi)` each.
fn same<'a>(net: &'static str, n: usize, f: usize, rows: &'a [(&str, usize, usize, usize)]) -> impl Iterator<Item = Layer> + 'a {
    rows.iter().map(move |&(name, c, k, hw)| l2(net, name, (n, 1, c, k), f, hw, 1, f / 2))
}

/// Pointwise (1x1) dense layers of `net`, batch `n`, named `1x1 C->K`:
/// `(C, K, Hi = Wi)` each.
fn pointwise<'a>(net: &'static str, n: usize, rows: &'a [(usize, usize, usize)]) -> impl Iterator<Item = Layer> + 'a {
    rows.iter().map(move |&(c, k, hw)| l2(net, &format!("1x1 {c}->{k}"), (n, 1, c, k), 1, hw, 1, 0))
}

/// The stride's part of a layer name: ` s2` for stride 2, nothing for 1.
fn strided(s: usize) -> String {
    if s > 1 { format!(" s{s}") } else { String::new() }
}

/// A layer from CK's argument list.
fn ck(net: &'static str, name: &str, args: &[usize]) -> Layer {
    let p = ConvProblem::from_ck_args(args).unwrap_or_else(|e| panic!("network layer {net} {name}: {e}"));
    Layer { net, name: name.into(), p }
}

/// `--suite channels`: layers with channel counts that are no multiple of 8
/// (issue #44: each within 20% of the next multiple of 8's time), each
/// followed by its twin with those counts rounded up to one (`.. twin`).
/// YOLOv5s's heads (batch 16), ShuffleNetV2's branches (batch 128), and the
/// issue's 3x3 layer of 100 channels (batch 32, 56x56).
pub fn odd_channel_pairs() -> Vec<Layer> {
    let up = |v: usize| v.div_ceil(8) * 8;
    let mut v = Vec::new();
    let mut pair = |net: &'static str, name: String, (n, c, k): (usize, usize, usize), f: usize, hw: usize| {
        v.push(l2(net, &name, (n, 1, c, k), f, hw, 1, f / 2));
        v.push(l2(net, &format!("{name} twin {}->{}", up(c), up(k)), (n, 1, up(c), up(k)), f, hw, 1, f / 2));
    };
    for (c, hw) in [(128, 80), (256, 40), (512, 20)] {
        pair("yolov5s", format!("head 1x1 {c}->255 {hw}x{hw}"), (16, c, 255), 1, hw);
    }
    for (name, c, k, hw) in [("stage2 1x1 24->58", 24, 58, 56), ("stage2 1x1 58", 58, 58, 28), ("stage3 1x1 116", 116, 116, 14)] {
        pair("shufflenet_v2", name.into(), (128, c, k), 1, hw);
    }
    pair("issue44", "3x3 100 56x56".into(), (32, 100, 100), 3, 56);
    pair("issue44", "3x3 100->128 56x56".into(), (32, 100, 128), 3, 56);
    v
}

/// Every layer of the suite.
pub fn layers() -> Vec<Layer> {
    let mut v = Vec::new();
    // ResNet-50 (torchvision v1.5: stride on the 3x3), batch 64.
    let r = "resnet50";
    v.push(l2(r, "conv1 7x7 s2", (64, 1, 3, 64), 7, 224, 2, 3));
    for (name, c, k, f, hw, s) in [
        ("layer1 1x1 64->64", 64, 64, 1, 56, 1),
        ("layer1 3x3 64", 64, 64, 3, 56, 1),
        ("layer1 1x1 64->256", 64, 256, 1, 56, 1),
        ("layer1 1x1 256->64", 256, 64, 1, 56, 1),
        ("layer2 1x1 256->128", 256, 128, 1, 56, 1),
        ("layer2 3x3 128 s2", 128, 128, 3, 56, 2),
        ("layer2 down 1x1 256->512 s2", 256, 512, 1, 56, 2),
        ("layer2 1x1 128->512", 128, 512, 1, 28, 1),
        ("layer2 3x3 128", 128, 128, 3, 28, 1),
        ("layer3 3x3 256 s2", 256, 256, 3, 28, 2),
        ("layer3 1x1 256->1024", 256, 1024, 1, 14, 1),
        ("layer3 1x1 1024->256", 1024, 256, 1, 14, 1),
        ("layer3 3x3 256", 256, 256, 3, 14, 1),
        ("layer4 3x3 512 s2", 512, 512, 3, 14, 2),
        ("layer4 1x1 512->2048", 512, 2048, 1, 7, 1),
        ("layer4 3x3 512", 512, 512, 3, 7, 1),
    ] {
        v.push(l2(r, name, (64, 1, c, k), f, hw, s, f / 2));
    }
    // ResNeXt-50 32x4d, batch 64: the grouped 3x3s (4, 8, 16, 32 channels per group).
    let r = "resnext50";
    // Named by stage and width (and stride): `(stage, width, Hi = Wi, stride)`.
    for (stage, w, hw, s) in [(1, 128, 56, 1), (2, 256, 56, 2), (2, 256, 28, 1), (3, 512, 28, 2), (3, 512, 14, 1), (4, 1024, 14, 2), (4, 1024, 7, 1)] {
        v.push(l2(r, &format!("layer{stage} 3x3 g32 {w}{}", strided(s)), (64, 32, w / 32, w / 32), 3, hw, s, 1));
    }
    // MobileNetV2, batch 64.
    let m = "mobilenet_v2";
    v.push(l2(m, "stem 3x3 s2", (64, 1, 3, 32), 3, 224, 2, 1));
    // Depthwise 3x3s, named by their channels (and stride).
    for (ch, hw, s) in [(32, 112, 1), (96, 112, 2), (144, 56, 1), (144, 56, 2), (192, 28, 1), (192, 28, 2), (384, 14, 1), (576, 14, 1), (576, 14, 2), (960, 7, 1)] {
        v.push(depthwise(m, &format!("depthwise {ch}{}", strided(s)), 64, ch, 3, hw, s));
    }
    v.extend(pointwise(m, 64, &[(32, 16, 112), (16, 96, 112), (96, 24, 56), (24, 144, 56), (144, 32, 28), (384, 64, 14), (960, 160, 7), (320, 1280, 7)]));
    // EfficientNet-B0 (5x5 depthwise), batch 64.
    let e = "efficientnet_b0";
    for (name, ch, f, hw, s) in [
        ("depthwise 144 5x5 s2", 144, 5, 56, 2),
        ("depthwise 240 5x5", 240, 5, 28, 1),
        ("depthwise 240 3x3 s2", 240, 3, 28, 2),
        ("depthwise 480 3x3", 480, 3, 14, 1),
        ("depthwise 480 5x5", 480, 5, 14, 1),
        ("depthwise 672 5x5 s2", 672, 5, 14, 2),
        ("depthwise 1152 5x5", 1152, 5, 7, 1),
    ] {
        v.push(depthwise(e, name, 64, ch, f, hw, s));
    }
    v.extend(pointwise(e, 64, &[(40, 240, 28), (80, 480, 14), (112, 672, 14), (192, 1152, 7)]));
    // ConvNeXt-T (7x7 depthwise, patchify stem and 2x2 stride-2 downsampling), batch 32.
    let x = "convnext_t";
    v.push(l2(x, "stem 4x4 s4", (32, 1, 3, 96), 4, 224, 4, 0));
    for (name, ch, hw) in [("depthwise 96 7x7", 96, 56), ("depthwise 192 7x7", 192, 28), ("depthwise 384 7x7", 384, 14), ("depthwise 768 7x7", 768, 7)] {
        v.push(depthwise(x, name, 32, ch, 7, hw, 1));
    }
    for (name, c, hw) in [("down 96->192 2x2 s2", 96, 56), ("down 192->384 2x2 s2", 192, 28), ("down 384->768 2x2 s2", 384, 14)] {
        v.push(l2(x, name, (32, 1, c, 2 * c), 2, hw, 2, 0));
    }
    // RegNetX-400MF (group width 16), batch 64.
    let g = "regnetx_400mf";
    for (name, w, hw, s) in [("3x3 g2 32 s2", 32, 112, 2), ("3x3 g4 64 s2", 64, 56, 2), ("3x3 g4 64", 64, 28, 1), ("3x3 g10 160 s2", 160, 28, 2), ("3x3 g10 160", 160, 14, 1), ("3x3 g24 384 s2", 384, 14, 2), ("3x3 g24 384", 384, 7, 1)] {
        v.push(l2(g, name, (64, w / 16, 16, 16), 3, hw, s, 1));
    }
    // ViT-B/16 patch embedding: stride = filter, no overlap.
    v.push(l2("vit_b16", "patch embed 16x16 s16", (64, 1, 3, 768), 16, 224, 16, 0));
    // 2-D U-Net (256x256 images), batch 16.
    let u = "unet2d";
    v.extend(same(u, 16, 3, &[
        ("enc1 3->64", 3, 64, 256),
        ("enc1 64->64", 64, 64, 256),
        ("enc2 64->128", 64, 128, 128),
        ("enc3 128->256", 128, 256, 64),
        ("enc4 256->512", 256, 512, 32),
        ("bottleneck 512->1024", 512, 1024, 16),
        ("dec4 1024->512", 1024, 512, 32),
        ("dec1 128->64", 128, 64, 256),
    ]));
    // 3-D U-Net (64^3 volumes, 4 input channels as in BraTS), batch 2.
    let u3 = "unet3d";
    for (name, c, k, d) in [("enc1 4->32", 4, 32, 64), ("enc1 32->32", 32, 32, 64), ("enc2 32->64", 32, 64, 32), ("enc3 64->128", 64, 128, 16), ("enc4 128->256", 128, 256, 8)] {
        v.push(ck(u3, name, &[3, 1, 2, k, c, 3, 3, 3, d, d, d, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]));
    }
    // Issue #44's classes: odd channel counts, wide diffusion layers, dilation, small K.
    // YOLOv5s detection heads (1x1 to 3 anchors x 85 = 255 outputs) at 640x640, batch 16.
    let y = "yolov5s";
    for (c, hw) in [(128, 80), (256, 40), (512, 20)] {
        v.push(l2(y, &format!("head 1x1 {c}->255 {hw}x{hw}"), (16, 1, c, 255), 1, hw, 1, 0));
    }
    v.push(l2(y, "csp 3x3 128 s2", (16, 1, 128, 128), 3, 80, 2, 1));
    // ShuffleNetV2 1.0x (torchvision: branch widths 58, 116, 232), batch 128.
    let sh = "shufflenet_v2";
    for (name, c, k, hw) in [
        ("stage2 1x1 24->58", 24, 58, 56),
        ("stage2 1x1 58", 58, 58, 28),
        ("stage3 1x1 116", 116, 116, 14),
        ("stage4 1x1 232", 232, 232, 7),
        ("conv5 1x1 464->1024", 464, 1024, 7),
    ] {
        v.push(l2(sh, name, (128, 1, c, k), 1, hw, 1, 0));
    }
    for (name, ch, hw, s) in [("stage2 depthwise 58 s2", 58, 56, 2), ("stage2 depthwise 58", 58, 28, 1), ("stage3 depthwise 116", 116, 14, 1), ("stage4 depthwise 232", 232, 7, 1)] {
        v.push(depthwise(sh, name, 128, ch, 3, hw, s));
    }
    // Stable Diffusion v1's U-Net on 64x64 latents (512x512 images), batch 8.
    let sd = "sd_unet";
    v.extend(same(sd, 8, 3, &[
        ("res 320 64x64", 320, 320, 64),
        ("res 320->640 32x32", 320, 640, 32),
        ("res 640 32x32", 640, 640, 32),
        ("res 640->1280 16x16", 640, 1280, 16),
        ("res 1280 16x16", 1280, 1280, 16),
        ("res 1280 8x8", 1280, 1280, 8),
        ("up res 2560->1280 8x8", 2560, 1280, 8),
        ("up res 960->320 64x64", 960, 320, 64),
    ]));
    v.push(l2(sd, "down 3x3 320 s2", (8, 1, 320, 320), 3, 64, 2, 1));
    // DeepLabV3 (ResNet-50, output stride 8: dilated layer3 and layer4, ASPP) on 512x512 crops, batch 16.
    let dl = "deeplabv3";
    for (name, c, k, d) in [
        ("layer3 3x3 256 d2", 256, 256, 2),
        ("layer4 3x3 512 d4", 512, 512, 4),
        ("aspp 3x3 2048->256 d12", 2048, 256, 12),
        ("aspp 3x3 2048->256 d24", 2048, 256, 24),
        ("aspp 3x3 2048->256 d36", 2048, 256, 36),
    ] {
        v.push(ck(dl, name, &[2, 1, 16, k, c, 3, 3, 64, 64, 1, 1, d, d, d, d, d, d]));
    }
    // DenseNet-121 (growth 32: 3x3 128->32 after a 1x1 bottleneck to 128), batch 64.
    let dn = "densenet121";
    for (name, c, hw) in [("block1 3x3 128->32", 128, 56), ("block2 3x3 128->32", 128, 28), ("block3 3x3 128->32", 128, 14), ("block4 3x3 128->32", 128, 7)] {
        v.push(l2(dn, name, (64, 1, c, 32), 3, hw, 1, 1));
    }
    for (name, c, hw) in [("block1 1x1 224->128", 224, 56), ("block2 1x1 480->128", 480, 28), ("block3 1x1 992->128", 992, 14)] {
        v.push(l2(dn, name, (64, 1, c, 128), 1, hw, 1, 0));
    }
    v.push(l2(dn, "transition2 1x1 512->256", (64, 1, 512, 256), 1, 28, 1, 0));
    // 1-D audio encoder (wav2vec 2.0's feature encoder on 1 s of 16 kHz audio), batch 8.
    let a = "wav2vec2_fe";
    v.push(ck(a, "conv0 1->512 k10 s5", &[1, 1, 8, 512, 1, 10, 16000, 5, 1, 0, 0]));
    v.push(ck(a, "conv1 512 k3 s2", &[1, 1, 8, 512, 512, 3, 3199, 2, 1, 0, 0]));
    v.push(ck(a, "conv4 512 k3 s2", &[1, 1, 8, 512, 512, 3, 399, 2, 1, 0, 0]));
    v.push(ck(a, "conv5 512 k2 s2", &[1, 1, 8, 512, 512, 2, 199, 2, 1, 0, 0]));
    v
}

#[cfg(test)]
mod tests {
    use convgrad::ops::{bwd_data, bwd_weight};
    use convgrad_types::instance::Family;

    /// Every layer is a valid problem that both ops plan on every family (f16, channels-last).
    #[test]
    fn every_layer_plans() {
        let layers = super::layers();
        assert_eq!(layers.len(), 122, "the suite has 122 layers");
        for l in &layers {
            for fam in [Family::Cdna, Family::Rdna3, Family::Nvidia] {
                let w = bwd_weight::plan(&l.p, &Default::default(), fam, 132);
                let d = bwd_data::plan(&l.p, &Default::default(), fam, 132);
                assert!(w.is_ok() && d.is_ok(), "{} {} on {fam:?}: {:?} {:?}", l.net, l.name, w.err(), d.err());
            }
        }
    }

    /// `--suite channels`: odd layers and their twins alternate, the twins'
    /// channels multiples of 8; on Hopper the odd ones run channel-packed
    /// in both ops where their K (bwd-data) or C or K (bwd-weight) is odd.
    #[test]
    fn odd_channel_pairs_pack() {
        let pairs = super::odd_channel_pairs();
        assert_eq!(pairs.len() % 2, 0);
        for two in pairs.chunks(2) {
            let (odd, twin) = (&two[0].p, &two[1].p);
            assert!(twin.c % 8 == 0 && twin.k % 8 == 0 && two[1].name.contains("twin"), "{}", two[1].name);
            assert!(odd.c % 8 != 0 || odd.k % 8 != 0, "{}", two[0].name);
            let w = bwd_weight::plan(odd, &Default::default(), Family::Hopper, 132).unwrap();
            let d = bwd_data::plan(odd, &Default::default(), Family::Hopper, 132).unwrap();
            assert!(w.pack.is_some(), "{}: {}", two[0].name, w.describe());
            assert!(d.pack.is_some(), "{}: {}", two[0].name, d.describe());
        }
    }
}
