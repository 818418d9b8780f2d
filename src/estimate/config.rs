//! A model's shape from a Hugging Face `config.json`, and its exact parameter count from the
//! `*.safetensors` headers beside it (the 8-byte length and the JSON header; no tensor data is
//! read).

use std::path::Path;

use serde_json::Value;

use super::model::Shape;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error(
        "{path}: architecture '{arch}' is not one gpumon derives parameters for (GPT-2, \
         GPT-NeoX, Llama/Mistral/Qwen2, BERT); give the count with --params"
    )]
    Unknown { path: String, arch: String },
    #[error("{path}: missing or invalid '{field}'")]
    Field { path: String, field: &'static str },
    #[error("{path}: a bad safetensors header: {why}")]
    Safetensors { path: String, why: String },
    #[error(transparent)]
    File(#[from] crate::files::FileError),
    #[error(
        "{index}: shard '{name}' is not a file name in the model's directory (a path, or \
         one that leaves the directory): refusing to open it"
    )]
    Shard { index: String, name: String },
}

/// The largest `config.json` read: real ones are a few KiB.
pub const MAX_CONFIG: u64 = 4 << 20;
/// The largest `model.safetensors.index.json` read: one line per tensor, a few hundred KiB
/// for the largest models.
pub const MAX_INDEX: u64 = 64 << 20;
/// The safetensors format's own limit on a header.
pub const MAX_HEADER: u64 = 100_000_000;

/// A size field, within what any real model has (so the products below cannot overflow:
/// every count stays under 2^62).
fn u(v: &Value, key: &str) -> Option<u64> {
    let max: u64 = match key {
        "n_layer" | "num_hidden_layers" => 100_000,
        "n_head" | "num_attention_heads" | "num_key_value_heads" => 65_536,
        "n_inner" | "intermediate_size" => 1 << 22,
        _ => 1 << 24,
    };
    v.get(key)?.as_u64().filter(|n| (1..=max).contains(n))
}

/// The shape a config describes, with its parameter count derived from the architecture.
pub fn shape_from_config(text: &str, path: &str) -> Result<Shape, ConfigError> {
    let v: Value = serde_json::from_str(text).map_err(|source| ConfigError::Json {
        path: path.into(),
        source,
    })?;
    let model_type = v
        .get("model_type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let need = |key: &'static str| {
        u(&v, key).ok_or(ConfigError::Field {
            path: path.into(),
            field: key,
        })
    };
    // The five sizes GPT-NeoX, the Llama family and BERT share, under the same names.
    let sizes = || -> Result<(u64, u64, u64, u64, u64), ConfigError> {
        Ok((
            need("hidden_size")?,
            need("num_hidden_layers")?,
            need("num_attention_heads")?,
            need("vocab_size")?,
            need("intermediate_size")?,
        ))
    };
    let tied = |default: bool| {
        v.get("tie_word_embeddings")
            .and_then(Value::as_bool)
            .unwrap_or(default)
    };
    match model_type.as_str() {
        "gpt2" => {
            let (h, l, a, vocab) = (
                need("n_embd")?,
                need("n_layer")?,
                need("n_head")?,
                need("vocab_size")?,
            );
            let pos = u(&v, "n_positions").or(u(&v, "n_ctx")).unwrap_or(1024);
            let inner = u(&v, "n_inner").unwrap_or(4 * h);
            // Per block: two LayerNorms, c_attn (h→3h), c_proj (h→h), c_fc (h→inner),
            // mlp c_proj (inner→h), all with biases; the LM head is tied to wte.
            let block =
                4 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * inner + inner) + (inner * h + h);
            Ok(Shape {
                family: "gpt2".into(),
                params: vocab * h + pos * h + l * block + 2 * h,
                layers: Some(l),
                hidden: Some(h),
                heads: Some(a),
                kv_heads: Some(a),
                vocab: Some(vocab),
                intermediate: Some(inner),
                gated_mlp: false,
                tied_embeddings: Some(true),
            })
        }
        "gpt_neox" => {
            let (h, l, a, vocab, i) = sizes()?;
            // Two LayerNorms, fused QKV (h→3h), dense (h→h), MLP h→i→h, all with biases.
            let block = 4 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * i + i) + (i * h + h);
            let heads_out = if tied(false) { 0 } else { vocab * h };
            let tied_embeddings = Some(tied(false));
            Ok(Shape {
                tied_embeddings,
                family: "gpt_neox".into(),
                params: vocab * h + heads_out + l * block + 2 * h,
                layers: Some(l),
                hidden: Some(h),
                heads: Some(a),
                kv_heads: Some(a),
                vocab: Some(vocab),
                intermediate: Some(i),
                gated_mlp: false,
            })
        }
        "llama" | "mistral" | "qwen2" => {
            let (h, l, a, vocab, i) = sizes()?;
            let kv = u(&v, "num_key_value_heads").unwrap_or(a);
            let head_dim = u(&v, "head_dim").unwrap_or(h / a.max(1));
            let q_out = a * head_dim;
            let kv_out = kv * head_dim;
            // Qwen2 has biases on q, k and v; Llama and Mistral none (attention_bias).
            let qkv_bias = model_type == "qwen2"
                || v.get("attention_bias").and_then(Value::as_bool) == Some(true);
            let bias = if qkv_bias { q_out + 2 * kv_out } else { 0 };
            // q, k, v, o; gate, up, down; two RMSNorms.
            let block = h * q_out + 2 * h * kv_out + q_out * h + bias + 3 * h * i + 2 * h;
            let head = if tied(false) { 0 } else { vocab * h };
            let tied_embeddings = Some(tied(false));
            Ok(Shape {
                tied_embeddings,
                family: model_type.clone(),
                params: vocab * h + head + l * block + h,
                layers: Some(l),
                hidden: Some(h),
                heads: Some(a),
                kv_heads: Some(kv),
                vocab: Some(vocab),
                intermediate: Some(i),
                gated_mlp: true,
            })
        }
        "bert" => {
            let (h, l, a, vocab, i) = sizes()?;
            let pos = u(&v, "max_position_embeddings").unwrap_or(512);
            let types = u(&v, "type_vocab_size").unwrap_or(2);
            // Word, position and type embeddings and their LayerNorm; per layer q, k, v, o
            // with biases, two LayerNorms, the MLP h→i→h; the pooler.
            let embeddings = (vocab + pos + types) * h + 2 * h;
            let block = 4 * (h * h + h) + 4 * h + (h * i + i) + (i * h + h);
            Ok(Shape {
                family: "bert".into(),
                params: embeddings + l * block + (h * h + h),
                layers: Some(l),
                hidden: Some(h),
                heads: Some(a),
                kv_heads: Some(a),
                vocab: Some(vocab),
                intermediate: Some(i),
                gated_mlp: false,
                tied_embeddings: Some(true),
            })
        }
        _ => {
            let arch = v
                .get("architectures")
                .and_then(|a| a.get(0))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or(model_type);
            Err(ConfigError::Unknown {
                path: path.into(),
                arch: if arch.is_empty() {
                    "unnamed".into()
                } else {
                    arch
                },
            })
        }
    }
}

/// Elements and bytes of the tensors one safetensors header lists.
pub fn safetensors_header_counts(bytes: &[u8], path: &str) -> Result<(u64, u64), ConfigError> {
    let bad = |why: &str| ConfigError::Safetensors {
        path: path.into(),
        why: why.into(),
    };
    let len_bytes: [u8; 8] = bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| bad("shorter than its 8-byte length"))?;
    let len = u64::from_le_bytes(len_bytes);
    if len > MAX_HEADER {
        return Err(bad("a header over 100 MB"));
    }
    let json = bytes
        .get(8..8 + len as usize)
        .ok_or_else(|| bad("the header is cut short"))?;
    let v: Value = serde_json::from_slice(json).map_err(|e| bad(&e.to_string()))?;
    let map = v
        .as_object()
        .ok_or_else(|| bad("the header is not an object"))?;
    let (mut elements, mut total) = (0u64, 0u64);
    for (name, t) in map {
        if name == "__metadata__" {
            continue;
        }
        let shape = t
            .get("shape")
            .and_then(Value::as_array)
            .ok_or_else(|| bad(&format!("{name} has no shape")))?;
        let n = shape
            .iter()
            .try_fold(1u64, |acc, d| acc.checked_mul(d.as_u64()?))
            .ok_or_else(|| bad(&format!("{name} has a bad shape")))?;
        let width = match t.get("dtype").and_then(Value::as_str).unwrap_or("") {
            "F64" | "I64" | "U64" => 8,
            "F32" | "I32" | "U32" => 4,
            "F16" | "BF16" | "I16" | "U16" => 2,
            "F8_E4M3" | "F8_E5M2" | "I8" | "U8" | "BOOL" => 1,
            other => return Err(bad(&format!("{name} has an unknown dtype '{other}'"))),
        };
        elements = elements.saturating_add(n);
        total = total.saturating_add(n.saturating_mul(width));
    }
    Ok((elements, total))
}

/// Reads the first bytes of a safetensors file: its length prefix and header only, after
/// checking the length it claims against the file's size (a 112-byte file claiming 2^63 bytes
/// of header is refused before anything is allocated).
fn read_header(path: &Path) -> Result<Vec<u8>, ConfigError> {
    use std::io::Read;
    let shown = path.display().to_string();
    let err = |source| ConfigError::Read {
        path: shown.clone(),
        source,
    };
    let (mut f, size) = crate::files::open_regular(path, "a safetensors file")?;
    let mut len = [0u8; 8];
    f.read_exact(&mut len).map_err(err)?;
    let n = u64::from_le_bytes(len);
    if n > MAX_HEADER || n > size.saturating_sub(8) {
        return Err(ConfigError::Safetensors {
            path: shown,
            why: format!(
                "it says its header is {n} bytes, but the file is {size} bytes{}",
                if n > MAX_HEADER {
                    " and the format allows 100 MB"
                } else {
                    ""
                }
            ),
        });
    }
    let mut out = len.to_vec();
    out.resize(8 + n as usize, 0);
    f.read_exact(&mut out[8..]).map_err(err)?;
    Ok(out)
}

/// Whether a shard name from an index is a plain file name in the model's directory: no
/// path, no `..`, nothing absolute (a downloaded index is not to be trusted with paths).
fn plain_file_name(name: &str) -> bool {
    let p = Path::new(name);
    !name.is_empty()
        && !name.contains(['/', '\\', '\0'])
        && p.file_name().is_some_and(|f| f == name)
        && name != ".."
        && name != "."
}

/// The model at `path`: a `config.json`, or a directory with one, whose `*.safetensors`
/// (listed by `model.safetensors.index.json` when sharded) give the exact count.
pub fn load(path: &Path) -> Result<(Shape, Option<u64>), ConfigError> {
    let (config, dir) = if path.is_dir() {
        (path.join("config.json"), Some(path))
    } else {
        (path.to_path_buf(), None)
    };
    let shown = config.display().to_string();
    let text = crate::files::read_text(&config, MAX_CONFIG, "a config.json")?;
    let mut shape = match shape_from_config(&text, &shown) {
        Ok(s) => s,
        // A directory with weights still gives the count: the shape flags do the rest.
        Err(ConfigError::Unknown { .. }) if dir.is_some() => Shape {
            family: "unknown".into(),
            ..Shape::default()
        },
        Err(e) => return Err(e),
    };
    let mut weight_bytes = None;
    if let Some(dir) = dir {
        let mut files: Vec<std::path::PathBuf> = Vec::new();
        let index = dir.join("model.safetensors.index.json");
        if index.exists() {
            let text = crate::files::read_text(&index, MAX_INDEX, "a safetensors index")?;
            let v: Value = serde_json::from_str(&text).map_err(|source| ConfigError::Json {
                path: index.display().to_string(),
                source,
            })?;
            let mut names: Vec<&str> = v
                .get("weight_map")
                .and_then(Value::as_object)
                .map(|m| m.values().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            names.sort_unstable();
            names.dedup();
            if let Some(name) = names.iter().find(|n| !plain_file_name(n)) {
                return Err(ConfigError::Shard {
                    index: index.display().to_string(),
                    name: crate::text::escape(name).into_owned(),
                });
            }
            files = names.into_iter().map(|n| dir.join(n)).collect();
        } else if let Ok(entries) = std::fs::read_dir(dir) {
            files = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
                .collect();
            files.sort();
        }
        if !files.is_empty() {
            let (mut elements, mut bytes) = (0u64, 0u64);
            for f in &files {
                let header = read_header(f)?;
                let (e, b) = safetensors_header_counts(&header, &f.display().to_string())?;
                elements += e;
                bytes += b;
            }
            shape.params = elements;
            weight_bytes = Some(bytes);
        }
    }
    Ok((shape, weight_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    #[test]
    fn published_parameter_counts_from_real_configs() {
        for (file, family, params, kv) in [
            ("gpt2.json", "gpt2", 124_439_808, 12),
            ("pythia-160m.json", "gpt_neox", 162_322_944, 12),
            ("llama-2-7b.json", "llama", 6_738_415_616, 32),
            ("mistral-7b-v0.1.json", "mistral", 7_241_732_096, 8),
            ("qwen2-0.5b.json", "qwen2", 494_032_768, 2),
            ("bert-base-uncased.json", "bert", 109_482_240, 12),
        ] {
            let (shape, on_disk) = load(&fixture(&format!("configs/{file}"))).expect(file);
            assert_eq!(shape.family, family, "{file}");
            assert_eq!(shape.params, params, "{file}");
            assert_eq!(shape.kv_heads, Some(kv), "{file}");
            assert_eq!(on_disk, None);
        }
    }

    #[test]
    fn an_architecture_it_does_not_know_asks_for_params() {
        let e = shape_from_config(
            r#"{"model_type": "mamba", "architectures": ["MambaForCausalLM"]}"#,
            "config.json",
        )
        .expect_err("unknown");
        assert!(e.to_string().contains("MambaForCausalLM") && e.to_string().contains("--params"));
        // Sizes no model has are refused, not multiplied into an overflow.
        let e = shape_from_config(
            r#"{"model_type":"llama","hidden_size":18446744073709551615,"num_hidden_layers":32,
                "num_attention_heads":32,"vocab_size":32000,"intermediate_size":11008}"#,
            "c.json",
        )
        .expect_err("absurd");
        assert!(e.to_string().contains("hidden_size"), "{e}");
        let e = shape_from_config(r#"{"model_type": "llama"}"#, "c.json").expect_err("fields");
        assert!(e.to_string().contains("hidden_size"), "{e}");
        assert!(shape_from_config("not json", "c.json").is_err());
    }

    #[test]
    fn sharded_safetensors_headers_give_the_exact_count() {
        let (shape, bytes) = load(&fixture("safetensors-sharded")).expect("model dir");
        assert_eq!(shape.family, "gpt2");
        assert_eq!(shape.params, 124_439_808);
        assert_eq!(bytes, Some(4 * 124_439_808));
    }

    #[test]
    fn bad_safetensors_headers_are_errors_not_panics() {
        assert!(safetensors_header_counts(b"short", "x").is_err());
        let mut huge = (u64::MAX).to_le_bytes().to_vec();
        huge.extend_from_slice(b"{}");
        assert!(safetensors_header_counts(&huge, "x").is_err());
        let mut cut = 100u64.to_le_bytes().to_vec();
        cut.extend_from_slice(b"{}");
        assert!(safetensors_header_counts(&cut, "x").is_err());
        let body = br#"{"w":{"dtype":"Q9","shape":[2],"data_offsets":[0,2]}}"#;
        let mut odd = (body.len() as u64).to_le_bytes().to_vec();
        odd.extend_from_slice(body);
        assert!(safetensors_header_counts(&odd, "x").is_err());
        let body =
            br#"{"w":{"dtype":"BF16","shape":[3,4],"data_offsets":[0,24]},"__metadata__":{}}"#;
        let mut ok = (body.len() as u64).to_le_bytes().to_vec();
        ok.extend_from_slice(body);
        assert_eq!(
            safetensors_header_counts(&ok, "x").expect("valid"),
            (12, 24)
        );
    }
}
