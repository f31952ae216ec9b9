//! Running a kernel spec: the arrays' data to host bytes, the launch split into parts, each part's
//! arguments with only its reads uploaded and its writes read back (`cl.rs` runs them), and the
//! outputs as new arrays.

use super::spec::{BufferKind, ScalarSpec, ScalarValue};
use super::{KernelRun, KernelSpec, PartStats, cl};
use crate::api::{Array, DynArray};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::{DType, Site};
use crate::proggen::access::{Span, Transfer};
use std::ops::Range;
use std::panic::Location;

impl KernelSpec {
    /// Runs the kernel over `dataset`: `inputs` are the arrays of the input and io buffers in
    /// position order, `named` the values of scalars the spec gives by `name`. Returns the output
    /// and io buffers as new arrays (in position order) and what each part moved.
    #[track_caller]
    pub fn launch(
        &self,
        dataset: usize,
        inputs: &[&DynArray],
        named: &[(&str, f64)],
    ) -> Result<KernelRun> {
        let site = Location::caller();
        let s = self.sizes(dataset, site)?;
        // Buffers in position order.
        let mut order: Vec<usize> = (0..self.buffers.len()).collect();
        order.sort_by_key(|&i| self.buffers[i].pos);
        let reads: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| self.buffers[i].kind != BufferKind::Output)
            .collect();
        if inputs.len() != reads.len() {
            return Err(Error::new(
                ErrorKind::Argument,
                format!(
                    "kernel `{}` takes {} input and io arrays, {} given",
                    self.name,
                    reads.len(),
                    inputs.len()
                ),
            )
            .at(site));
        }
        let mut host: Vec<Vec<u8>> = self
            .buffers
            .iter()
            .zip(&s.lens)
            .map(|(b, &len)| vec![0u8; len * b.dtype.size()])
            .collect();
        for (k, (&i, a)) in reads.iter().zip(inputs).enumerate() {
            let b = &self.buffers[i];
            let len = s.lens[i];
            if a.dtype() != b.dtype || a.shape().iter().product::<usize>() != len {
                return Err(Error::new(
                    ErrorKind::Argument,
                    format!(
                        "input {k} of kernel `{}` ({}, position {}) is {} x {:?}; the spec wants \
                         {len} {} elements",
                        self.name,
                        b.field,
                        b.pos,
                        a.dtype(),
                        a.shape(),
                        b.dtype
                    ),
                )
                .at(site));
            }
            host[i] = bytes_of(a)?;
        }
        let parts = self.parts_of(&s);
        if parts.len() > 1
            && let Some(b) = self
                .buffers
                .iter()
                .find(|b| b.kind != BufferKind::Input && !b.split)
        {
            return Err(self.err(
                format!(
                    "{}: a buffer the kernel writes must be splittable (`split`: true) when the \
                     launch is split (partition {}); or use partition 0 or 10",
                    b.field, self.partition
                ),
                site,
            ));
        }
        let dev = cl::device().map_err(|m| {
            Error::new(
                ErrorKind::Runtime,
                format!("kernel `{}` needs an OpenCL device: {m}", self.name),
            )
            .at(site)
            .hint("install an OpenCL driver (PoCL runs on the CPU) and set ARRAYFLOW_DEVICE=opencl")
        })?;
        let mut stats = Vec::new();
        let mut dev = dev.lock();
        for part in parts {
            let acc = self.access_of(&s, part.clone());
            // The arguments by position: buffers, then scalars.
            let n = self.buffers.len() + self.scalars.len();
            let mut slots: Vec<Option<cl::ClArg>> = (0..n).map(|_| None).collect();
            // Byte ranges moved, per buffer: the hull of the span (one interval for these).
            let range = |i: usize, sp: &Span| {
                let size = self.buffers[i].dtype.size();
                match sp {
                    Span::Empty => None,
                    Span::Intervals(v) => Some(v[0].start * size..v[v.len() - 1].end * size),
                    Span::Whole | Span::Unknown => Some(0..s.lens[i] * size),
                }
            };
            let mut down: Vec<Option<(Range<usize>, Vec<u8>)>> = acc
                .iter()
                .enumerate()
                .map(|(i, a)| range(i, &a.writes).map(|r| (r.clone(), vec![0u8; r.len()])))
                .collect();
            // What this part moves, counted from the transfers it makes.
            let mut moved = Transfer::default();
            for ((i, a), d) in acc.iter().enumerate().zip(down.iter_mut()) {
                let upload = range(i, &a.reads).map(|r| (r.clone(), &host[i][r]));
                moved.upload_bytes += upload.as_ref().map_or(0, |(r, _)| r.len());
                moved.download_bytes += d.as_ref().map_or(0, |(r, _)| r.len());
                let download = d.as_mut().map(|(r, buf)| (r.clone(), &mut buf[..]));
                slots[self.buffers[i].pos as usize] = Some(cl::ClArg::Buffer {
                    bytes: s.lens[i] * self.buffers[i].dtype.size(),
                    upload,
                    download,
                });
            }
            for sc in &self.scalars {
                let v = self.scalar_value(sc, dataset, named, site)?;
                slots[sc.pos as usize] = Some(cl::ClArg::Scalar(v));
            }
            let mut args: Vec<cl::ClArg> = slots.into_iter().map(|a| a.unwrap()).collect();
            let mut global = s.global;
            global[0] = part.len();
            let launch = cl::ClLaunch {
                source: &self.source,
                name: &self.name,
                offset: [part.start, 0, 0],
                global,
                local: s.local,
                work_dim: self.work_dim,
            };
            dev.run(&launch, &mut args).map_err(|m| {
                Error::new(
                    ErrorKind::Execution,
                    format!("kernel `{}` ({}): {m}", self.name, self.src.display()),
                )
                .at(site)
            })?;
            drop(args);
            for (i, d) in down.into_iter().enumerate() {
                if let Some((r, data)) = d {
                    host[i][r].copy_from_slice(&data);
                }
            }
            stats.push(PartStats { items: part, moved });
        }
        let device = dev.name.clone();
        drop(dev);
        let outputs = order
            .iter()
            .filter(|&&i| self.buffers[i].kind != BufferKind::Input)
            .map(|&i| array_of(self.buffers[i].dtype, &host[i]))
            .collect();
        Ok(KernelRun {
            outputs,
            parts: stats,
            device,
        })
    }

    fn scalar_value(
        &self,
        sc: &ScalarSpec,
        dataset: usize,
        named: &[(&str, f64)],
        site: Site,
    ) -> Result<Vec<u8>> {
        let v = match &sc.value {
            ScalarValue::Number(v) => *v,
            ScalarValue::Expr(e) => e.eval(dataset as i64).map_err(|m| {
                self.err(
                    format!("{}.value: {m} for dataset {dataset}", sc.field),
                    site,
                )
            })? as f64,
            ScalarValue::Named(n) => match named.iter().find(|(k, _)| k == n) {
                Some(&(_, v)) => v,
                None => {
                    return Err(Error::new(
                        ErrorKind::Argument,
                        format!(
                            "kernel `{}` needs the scalar `{n}` ({}); pass it as (\"{n}\", value)",
                            self.name, sc.field
                        ),
                    )
                    .at(site));
                }
            },
        };
        Ok(match sc.dtype {
            DType::F32 => (v as f32).to_ne_bytes().to_vec(),
            DType::F64 => v.to_ne_bytes().to_vec(),
            DType::I32 => (v as i32).to_ne_bytes().to_vec(),
            _ => (v as u32).to_ne_bytes().to_vec(),
        })
    }
}

/// The elements of an array as bytes (read from the runtime).
#[track_caller]
fn bytes_of(a: &DynArray) -> Result<Vec<u8>> {
    let a = a.clone();
    Ok(match a.dtype() {
        DType::F32 => bytemuck::cast_slice(&a.downcast::<f32>()?.to_vec()?).to_vec(),
        DType::F64 => bytemuck::cast_slice(&a.downcast::<f64>()?.to_vec()?).to_vec(),
        DType::I32 => bytemuck::cast_slice(&a.downcast::<i32>()?.to_vec()?).to_vec(),
        _ => bytemuck::cast_slice(&a.downcast::<u32>()?.to_vec()?).to_vec(),
    })
}

/// A new 1-D array of `dtype` from its bytes.
fn array_of(dtype: DType, b: &[u8]) -> DynArray {
    fn typed<T: crate::api::Element + bytemuck::Pod>(b: &[u8]) -> DynArray {
        let v: Vec<T> = bytemuck::pod_collect_to_vec(b);
        let n = v.len();
        Array::from_vec(v, &[n]).into_dyn()
    }
    match dtype {
        DType::F32 => typed::<f32>(b),
        DType::F64 => typed::<f64>(b),
        DType::I32 => typed::<i32>(b),
        _ => typed::<u32>(b),
    }
}
