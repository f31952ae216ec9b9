//! A diagnostic outside the runtime: times WGSL kernels read from files on the first wgpu
//! adapter, with timestamp queries around each of 16 dispatches (the median of the last 15),
//! to compare a kernel the runtime generated (dump it with the trace target
//! `arrayflow::exec::source`) against the runtime's own timing of it
//! (`ARRAYFLOW_KERNEL_TIMES=1`). Each file has the entry point `main`; every binding it declares
//! gets a storage buffer of `N` 32-bit words (binding 0 filled with values near 1); `IMM=a,b,..`
//! sets immediate data (u32 words), `SYNC=1` submits and waits for each dispatch apart,
//! `PCACHE=1` builds through a pipeline cache, `DATA=lo,hi` spreads the inputs over `[lo, hi)`,
//! `POLLER=1` polls the device from another thread all along, `PINGPONG=1` swaps the first two
//! bindings every other dispatch, `COPYIN=1` copies into binding 0 before each dispatch,
//! `INVENTORY=1` lists arrayflow's devices first (OpenCL and Vulkan drivers loaded in the
//! process), `RUNTIME=1` also runs a small arrayflow program on wgpu and keeps its runtime alive.
//!
//! ```sh
//! cargo run --release --example wgsl_timing -- 4194304 4096 kernel.wgsl [more.wgsl ...]
//! ```

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: wgsl_timing N GROUPS file.wgsl [file.wgsl ...]");
        return;
    }
    let n: u64 = args[1].parse().unwrap();
    if std::env::var("INVENTORY").is_ok() || std::env::var("RUNTIME").is_ok() {
        for d in arrayflow::exec::device::inventory() {
            println!("arrayflow found {d}");
        }
    }
    if std::env::var("RUNTIME").is_ok() {
        // SAFETY: set before the runtime reads it, while this process has one thread.
        unsafe { std::env::set_var("ARRAYFLOW_DEVICE", "wgpu") };
        let a = arrayflow::Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]);
        println!("arrayflow on wgpu: {}", (&a * 2.0).sum().item().unwrap());
    }
    let groups: u32 = args[2].parse().unwrap();
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter = pollster::block_on(instance.request_adapter(&Default::default())).unwrap();
    println!("{:?}", adapter.get_info().name);
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_features: wgpu::Features::TIMESTAMP_QUERY
            | (adapter.features() & (wgpu::Features::IMMEDIATES | wgpu::Features::PIPELINE_CACHE)),
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .unwrap();
    // `DATA=lo,hi`: inputs spread over [lo, hi) (a fixed sequence) instead of values near 1.
    // `POLLER=1`: another thread polls the device without blocking all along (as the runtime's
    // polling thread does while work is outstanding).
    if std::env::var("POLLER").is_ok() {
        let d = device.clone();
        std::thread::spawn(move || {
            loop {
                let _ = d.poll(wgpu::PollType::Poll);
            }
        });
    }
    let data: Vec<f32> = match std::env::var("DATA") {
        Ok(r) => {
            let (lo, hi) = r.split_once(',').expect("DATA=lo,hi");
            let (lo, hi): (f32, f32) = (lo.parse().unwrap(), hi.parse().unwrap());
            (0..n)
                .map(|i| {
                    lo + (hi - lo) * ((i as u32).wrapping_mul(2654435761) >> 8) as f32 / 16777216.0
                })
                .collect()
        }
        Err(_) => (0..n).map(|i| 1.0 + (i % 97) as f32 * 0.01).collect(),
    };
    // A storage buffer of `n` words, holding `data` or zeros.
    let storage = |fill: bool| {
        let b = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: n * 4,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if fill {
            queue.write_buffer(&b, 0, bytemuck::cast_slice(&data));
        }
        b
    };
    let in0 = storage(true);
    let out0 = storage(false);
    let imm: Vec<u32> = std::env::var("IMM")
        .map(|v| v.split(',').map(|x| x.parse().unwrap()).collect())
        .unwrap_or_default();
    let qs = device.create_query_set(&wgpu::QuerySetDescriptor {
        label: None,
        ty: wgpu::QueryType::Timestamp,
        count: 64,
    });
    let resolve = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 512,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let read = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 512,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let cache = std::env::var("PCACHE").is_ok().then(|| unsafe {
        device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
            label: None,
            data: None,
            fallback: true,
        })
    });
    let period = queue.get_timestamp_period() as f64;
    for file in &args[3..] {
        let src = std::fs::read_to_string(file).unwrap();
        let src_text = src.clone();
        let mut checks = wgpu::ShaderRuntimeChecks::unchecked();
        checks.int_div_checks = true;
        let module = unsafe {
            device.create_shader_module_trusted(
                wgpu::ShaderModuleDescriptor {
                    label: None,
                    source: wgpu::ShaderSource::Wgsl(src.into()),
                },
                checks,
            )
        };
        let pipe = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: cache.as_ref(),
        });
        let nb = src_text.matches("@binding(").count();
        let extra: Vec<wgpu::Buffer> = (2..nb).map(|_| storage(true)).collect();
        let mut entries = vec![
            wgpu::BindGroupEntry {
                binding: 0,
                resource: in0.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: out0.as_entire_binding(),
            },
        ];
        for (i, b) in extra.iter().enumerate() {
            entries.push(wgpu::BindGroupEntry {
                binding: 2 + i as u32,
                resource: b.as_entire_binding(),
            });
        }
        let bg = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipe.get_bind_group_layout(0),
            entries: &entries,
        });
        // `PINGPONG=1`: odd dispatches read binding 1's buffer and write binding 0's (each
        // input was written by the dispatch before, as a time-stepping loop's is).
        let mut swapped = entries.clone();
        swapped[0].resource = out0.as_entire_binding();
        swapped[1].resource = in0.as_entire_binding();
        let bg_swapped = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipe.get_bind_group_layout(0),
            entries: &swapped,
        });
        let pingpong = std::env::var("PINGPONG").is_ok();
        // `COPYIN=1`: binding 0's buffer is rewritten by a copy before each dispatch (as an
        // upload writes a program's input).
        let source = std::env::var("COPYIN").is_ok().then(|| storage(true));
        let mut enc = device.create_command_encoder(&Default::default());
        let reps = 16u32;
        let sync = std::env::var("SYNC").is_ok();
        for r in 0..reps {
            if sync && r > 0 {
                let e =
                    std::mem::replace(&mut enc, device.create_command_encoder(&Default::default()));
                queue.submit([e.finish()]);
                device
                    .poll(wgpu::PollType::Wait {
                        submission_index: None,
                        timeout: None,
                    })
                    .unwrap();
                if let Ok(us) = std::env::var("SLEEP_US") {
                    std::thread::sleep(std::time::Duration::from_micros(us.parse().unwrap()));
                }
            }
            if let Some(src) = &source {
                enc.copy_buffer_to_buffer(src, 0, &in0, 0, n * 4);
            }
            let mut cp = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: &qs,
                    beginning_of_pass_write_index: Some(2 * r),
                    end_of_pass_write_index: Some(2 * r + 1),
                }),
            });
            cp.set_pipeline(&pipe);
            cp.set_bind_group(
                0,
                if pingpong && r % 2 == 1 {
                    &bg_swapped
                } else {
                    &bg
                },
                &[],
            );
            if !imm.is_empty() {
                cp.set_immediates(0, bytemuck::cast_slice(&imm));
            }
            cp.dispatch_workgroups(groups, 1, 1);
        }
        enc.resolve_query_set(&qs, 0..2 * reps, &resolve, 0);
        enc.copy_buffer_to_buffer(&resolve, 0, &read, 0, 16 * reps as u64);
        let t0 = std::time::Instant::now();
        queue.submit([enc.finish()]);
        read.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .unwrap();
        let wall = t0.elapsed();
        let v = read.slice(..).get_mapped_range().unwrap();
        let t: &[u64] = bytemuck::cast_slice(&v);
        let mut d: Vec<f64> = (1..reps as usize)
            .map(|r| (t[2 * r + 1] - t[2 * r]) as f64 * period / 1e3)
            .collect();
        d.sort_by(f64::total_cmp);
        drop(v);
        read.unmap();
        println!(
            "{file}: median {:.1} us (min {:.1}), wall {:?} for {reps}",
            d[d.len() / 2],
            d[0],
            wall
        );
    }
}
