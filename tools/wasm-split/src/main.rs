//! `countersign-wasm-split <input.wasm> <pkg dir> <main out.wasm> <main module>`
//!
//! Splits a wasm linked with `--emit-relocs` at its `wasm_split` points (Leptos's
//! `#[lazy_route]`): the main module goes to `<main out.wasm>` for wasm-bindgen, the chunks and
//! their loader (`__wasm_split.______________________.js`, the name Leptos's
//! `HydrationScripts` preloads) to `<pkg dir>`, and `__wasm_split_manifest.json` (which chunks
//! each split point needs) next to them, where the server reads it to preload a page's chunks.
//!
//! **Every chunk's name carries the build's id** (a hash of the main module and all chunks):
//! a chunk finds the main module's functions and data at fixed table slots and addresses, so a
//! tab still running an older main module must never load a newer chunk. Under these names an
//! old tab asks for its own build's chunks, which a newer build has removed: a clean failure
//! (`hydrate`'s panic hook stops the page) instead of a mixed build. The manifest is written
//! to a temporary file and renamed, so a server never reads half of it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use sha2::{Digest, Sha256};

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
    let build_id = build_id(&main_out, &split.split_modules)?;
    let mut loader = std::fs::read_to_string(pkg_dir.join(LINK_NAME))
        .map_err(|e| format!("cannot read the loader: {e}"))?;
    let mut renamed = HashMap::new();
    for module in &split.split_modules {
        let stem = module
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or_else(|| format!("a chunk without a name: {}", module.display()))?
            .to_owned();
        let new_stem = format!("{stem}.{build_id}");
        std::fs::rename(module, pkg_dir.join(format!("{new_stem}.wasm")))
            .map_err(|e| format!("cannot rename {}: {e}", module.display()))?;
        let quoted = format!("\"./{stem}.wasm\"");
        if !loader.contains(&quoted) {
            return Err(format!("the loader does not name {stem}.wasm"));
        }
        loader = loader.replace(&quoted, &format!("\"./{new_stem}.wasm\""));
        renamed.insert(stem, new_stem);
    }
    write_whole(&pkg_dir.join(LINK_NAME), &loader)?;
    let mut manifest = split.prefetch_map;
    for stems in manifest.values_mut() {
        for stem in stems.iter_mut() {
            *stem = renamed
                .get(stem.as_str())
                .cloned()
                .ok_or_else(|| format!("the manifest names an unknown chunk {stem}"))?;
        }
    }
    let manifest = serde_json::to_string_pretty(&manifest)
        .map_err(|e| format!("cannot write the manifest: {e}"))?;
    write_whole(&pkg_dir.join("__wasm_split_manifest.json"), &manifest)?;
    Ok(split.split_modules.len())
}

/// The build's id: the first 16 hex digits of the sha256 of the main module and every chunk.
fn build_id(main_out: &Path, chunks: &[PathBuf]) -> Result<String, String> {
    let mut hasher = Sha256::new();
    let mut files = vec![main_out.to_path_buf()];
    files.extend(chunks.iter().cloned());
    files[1..].sort();
    for file in &files {
        let bytes =
            std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    let digest = hasher.finalize();
    Ok(digest.iter().take(8).map(|b| format!("{b:02x}")).collect())
}

/// Writes `text` to a temporary file beside `path`, then renames it into place.
fn write_whole(path: &Path, text: &str) -> Result<(), String> {
    let temporary = path.with_extension("partial");
    std::fs::write(&temporary, text)
        .map_err(|e| format!("cannot write {}: {e}", temporary.display()))?;
    std::fs::rename(&temporary, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
