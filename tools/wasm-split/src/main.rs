//! `countersign-wasm-split <input.wasm> <pkg dir> <main out.wasm> <main module>`
//!
//! Splits a wasm linked with `--emit-relocs` at its `wasm_split` points (Leptos's
//! `#[lazy_route]`): the main module goes to `<main out.wasm>` for wasm-bindgen, the chunks and
//! their loader (`__wasm_split.______________________.js`, the name Leptos's
//! `HydrationScripts` preloads) to `<pkg dir>`, and `__wasm_split_manifest.json` (which chunks
//! each split point needs) next to them, where the server reads it to preload a page's chunks.

use std::path::PathBuf;
use std::process::ExitCode;

/// The loader's name: Leptos preloads exactly this file when a page uses a lazy route.
const LINK_NAME: &str = "./__wasm_split.______________________.js";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, pkg_dir, main_out, main_module] = args.as_slice() else {
        eprintln!(
            "usage: countersign-wasm-split <input.wasm> <pkg dir> <main out.wasm> <main module>"
        );
        return ExitCode::from(2);
    };
    match split(input, pkg_dir, main_out, main_module) {
        Ok(chunks) => {
            println!("split into the main module and {chunks} chunk(s)");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("countersign-wasm-split: {err}");
            ExitCode::FAILURE
        }
    }
}

fn split(input: &str, pkg_dir: &str, main_out: &str, main_module: &str) -> Result<usize, String> {
    let wasm = std::fs::read(input).map_err(|e| format!("cannot read {input}: {e}"))?;
    let pkg_dir = PathBuf::from(pkg_dir);
    let main_out = PathBuf::from(main_out);
    let mut options = wasm_split_cli_support::Options::new(&wasm);
    options.output_dir = pkg_dir.as_path();
    options.main_out_path = main_out.as_path();
    options.main_module = main_module;
    options.link_name = LINK_NAME;
    let split = wasm_split_cli_support::transform(options).map_err(|e| format!("{e:?}"))?;
    let manifest = serde_json::to_string_pretty(&split.prefetch_map)
        .map_err(|e| format!("cannot write the manifest: {e}"))?;
    let manifest_path = pkg_dir.join("__wasm_split_manifest.json");
    std::fs::write(&manifest_path, manifest)
        .map_err(|e| format!("cannot write {}: {e}", manifest_path.display()))?;
    Ok(split.split_modules.len())
}
