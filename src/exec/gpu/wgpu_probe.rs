//! What a wgpu device's arithmetic does, found once when its executor starts by running a probe
//! kernel: whether WGSL's `fma` is fused (one rounding). Vulkan lets a driver compute `fma` as a
//! product and a sum rounded apart (lavapipe on a CPU without FMA does); NVIDIA's driver fuses it.
//! The WGSL renderer uses a fused `fma` for the exact library's remainders
//! (`Target::fused_fma`), a few instructions where Dekker's product takes about fifteen.

use wgpu::util::DeviceExt;

/// Probe cases: `a, b` in [1, 2) and `c = -(a * b)` rounded, so a fused `fma(a, b, c)` is the
/// product's rounding error (nonzero for almost every pair) where an unfused one gives 0.
const CASES: usize = 256;

const SOURCE: &str = "
@group(0) @binding(0) var<storage, read> abc: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn probe(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i < arrayLength(&out)) {
    out[i] = fma(abc[3u * i], abc[3u * i + 1u], abc[3u * i + 2u]);
  }
}
";

/// The probe's inputs (a fixed pseudo-random sequence) as `a, b, c` triples.
fn cases() -> Vec<f32> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut unit = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        f32::from_bits(0x3f80_0000 | ((state >> 41) as u32 & 0x007f_ffff))
    };
    (0..CASES)
        .flat_map(|_| {
            let (a, b) = (unit(), unit());
            [a, b, -(a * b)]
        })
        .collect()
}

/// Whether `device`'s `fma` rounds once on every probe case (bit for bit `f32::mul_add`). A
/// probe that fails to run says not fused (the exact library then takes Dekker's products).
pub fn fused_fma(device: &wgpu::Device, queue: &wgpu::Queue) -> bool {
    let abc = cases();
    let want: Vec<u32> = abc
        .chunks(3)
        .map(|t| t[0].mul_add(t[1], t[2]).to_bits())
        .collect();
    match run(device, queue, &abc) {
        Ok(got) => got == want,
        Err(e) => {
            tracing::warn!(target: "arrayflow::exec", "wgpu fma probe failed ({e}); taking fma as not fused");
            false
        }
    }
}

/// Runs the probe kernel on `abc` and returns its results' bits.
fn run(device: &wgpu::Device, queue: &wgpu::Queue, abc: &[f32]) -> Result<Vec<u32>, String> {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("arrayflow fma probe"),
        source: wgpu::ShaderSource::Wgsl(SOURCE.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("arrayflow fma probe"),
        layout: None,
        module: &module,
        entry_point: Some("probe"),
        compilation_options: Default::default(),
        cache: None,
    });
    let bytes = (CASES * 4) as u64;
    let input = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(abc),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: input.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: output.as_entire_binding(),
            },
        ],
    });
    let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
    {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(CASES.div_ceil(64) as u32, 1, 1);
    }
    enc.copy_buffer_to_buffer(&output, 0, &staging, 0, bytes);
    queue.submit([enc.finish()]);
    let (tx, rx) = std::sync::mpsc::channel();
    staging
        .slice(..)
        .map_async(wgpu::MapMode::Read, move |r| drop(tx.send(r)));
    device
        .poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: None,
        })
        .map_err(|e| e.to_string())?;
    rx.recv()
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let got = {
        let view = staging.get_mapped_range(..).map_err(|e| e.to_string())?;
        bytemuck::cast_slice::<u8, u32>(&view).to_vec()
    };
    staging.unmap();
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cases tell a fused fma from an unfused one: nearly every product's rounding error is
    /// nonzero, so an unfused `fma` (0 for each) cannot pass.
    #[test]
    fn unfused_fma_fails_the_probe() {
        let abc = cases();
        let nonzero = abc
            .chunks(3)
            .filter(|t| t[0].mul_add(t[1], t[2]) != 0.0)
            .count();
        assert!(nonzero > CASES * 9 / 10, "{nonzero} of {CASES}");
        // The rounding error, checked in f64 (a product of two f32 is exact there).
        for t in abc.chunks(3) {
            let exact = t[0] as f64 * t[1] as f64 + t[2] as f64;
            assert_eq!(t[0].mul_add(t[1], t[2]) as f64, exact);
        }
    }
}
