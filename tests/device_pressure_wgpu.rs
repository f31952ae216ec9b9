//! Memory pressure and kernel splitting on the wgpu executor (see `common/pressure.rs`).

#[path = "common/pressure.rs"]
mod pressure;

use arrayflow::Backend;

#[test]
fn swapping_keeps_values() {
    if let Some(_one_at_a_time) = pressure::start(Backend::Wgpu) {
        pressure::swapping_keeps_values();
    }
}

#[test]
fn too_big_runs_on_the_cpu() {
    if let Some(_one_at_a_time) = pressure::start(Backend::Wgpu) {
        pressure::too_big_runs_on_the_cpu();
    }
}

#[test]
fn big_kernels_are_split() {
    if let Some(_one_at_a_time) = pressure::start(Backend::Wgpu) {
        pressure::big_kernels_are_split();
    }
}

#[test]
fn profiled_swaps_carry_bytes_and_time() {
    if let Some(_one_at_a_time) = pressure::start(Backend::Wgpu) {
        pressure::profiled_swaps_carry_bytes_and_time();
    }
}

#[test]
fn split_kernels_in_passes_run_on_the_tile_vm() {
    if let Some(_one_at_a_time) = pressure::start(Backend::Wgpu) {
        pressure::split_kernels_in_passes_run_on_the_tile_vm();
    }
}
