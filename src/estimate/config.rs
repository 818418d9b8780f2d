//! A model's shape from a Hugging Face `config.json`, and its exact parameter count from the
//! `*.safetensors` headers beside it (the 8-byte length and the JSON header; no tensor data is
//! read).

use std::path::Path;

use serde_json::Value;

use super::memory::{Act, Norm, Shape};

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
    // Residual dropout (after attention and after the MLP): its probability under the
    // family's name and default (GPT2Config, GPTNeoXConfig, BertConfig).
    let dropout = |key: &str, default: f64| {
        let p = v.get(key).and_then(Value::as_f64).unwrap_or(default);
        Some(p > 0.0)
    };
    let act = |key: &str, default: &str| {
        Some(Act::from_config(
            v.get(key).and_then(Value::as_str).unwrap_or(default),
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
                norm: Some(Norm::LayerNorm),
                activation: act("activation_function", "gelu_new"),
                residual_dropout: dropout("resid_pdrop", 0.1),
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
                norm: Some(Norm::LayerNorm),
                activation: act("hidden_act", "gelu"),
                residual_dropout: dropout("hidden_dropout", 0.0),
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
                // LlamaRMSNorm, MistralRMSNorm, Qwen2RMSNorm; no residual dropout (their
                // `attention_dropout` is inside the fused attention, which keeps no mask).
                norm: Some(Norm::RmsNorm),
                activation: act("hidden_act", "silu"),
                residual_dropout: Some(false),
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
                norm: Some(Norm::LayerNorm),
                activation: act("hidden_act", "gelu"),
                residual_dropout: dropout("hidden_dropout_prob", 0.1),
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
///
/// Each tensor's `data_offsets` must agree with its shape and dtype (`end - begin` is its
/// bytes, `begin <= end`), and, with `data_len` (the file's size less its header), lie in the
/// file, the tensors together no more than it holds: a 12 MB header of 200,000 tensors of
/// 4096 × 4096 claiming 2 bytes each counted 3.3 T parameters. Names and dtypes come from a
/// downloaded file: they are escaped in every message.
pub fn safetensors_header_counts(
    bytes: &[u8],
    path: &str,
    data_len: Option<u64>,
) -> Result<(u64, u64), ConfigError> {
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
        let name = crate::text::escape(name);
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
            other => {
                return Err(bad(&format!(
                    "{name} has an unknown dtype '{}'",
                    crate::text::escape(other)
                )))
            }
        };
        let inconsistent = |why: String| bad(&format!("the header is inconsistent: {name} {why}"));
        let offsets = t
            .get("data_offsets")
            .and_then(Value::as_array)
            .and_then(|o| {
                Some((o.first()?.as_u64()?, o.get(1)?.as_u64()?)).filter(|_| o.len() == 2)
            })
            .ok_or_else(|| inconsistent("has no data_offsets [begin, end]".into()))?;
        let bytes = n
            .checked_mul(width)
            .ok_or_else(|| bad(&format!("{name} has a bad shape")))?;
        let (begin, end) = offsets;
        if begin > end {
            return Err(inconsistent(format!(
                "begins at {begin}, after its end {end}"
            )));
        }
        if end - begin != bytes {
            return Err(inconsistent(format!(
                "is {bytes} bytes by its shape and dtype, but its data_offsets span {}",
                end - begin
            )));
        }
        if let Some(len) = data_len.filter(|len| end > *len) {
            return Err(inconsistent(format!(
                "ends at byte {end} of the data, but the file holds {len} (cut short?)"
            )));
        }
        elements = elements.saturating_add(n);
        total = total.saturating_add(bytes);
    }
    // Non-overlapping tensors fit in the data: more than it holds means they overlap.
    if let Some(len) = data_len.filter(|len| total > *len) {
        return Err(bad(&format!(
            "the header is inconsistent: its tensors take {total} bytes, but the file holds {len}"
        )));
    }
    Ok((elements, total))
}

/// Reads the first bytes of a safetensors file: its length prefix and header only, after
/// checking the length it claims against the file's size (a 112-byte file claiming 2^63 bytes
/// of header is refused before anything is allocated).
fn read_header(path: &Path) -> Result<(Vec<u8>, u64), ConfigError> {
    use std::io::Read;
    let shown = display_path(path);
    let err = |source| ConfigError::Read {
        path: shown.clone(),
        source,
    };
    let (mut f, size) = crate::files::open_regular(path, "a safetensors file").map_err(|e| {
        crate::files::FileError {
            path: shown.clone(),
            reason: e.reason,
        }
    })?;
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
    Ok((out, size - 8 - n))
}

/// A path in a message: a shard's name comes from a downloaded index.
fn display_path(path: &Path) -> String {
    crate::text::escape(&path.display().to_string()).into_owned()
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
    let shown = display_path(&config);
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
                path: display_path(&index),
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
                    index: display_path(&index),
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
                let (header, data_len) = read_header(f)?;
                let (e, b) = safetensors_header_counts(&header, &display_path(f), Some(data_len))?;
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
    fn norms_activations_and_dropout_from_real_configs() {
        use super::super::memory::{Act, Norm};
        for (file, norm, act, dropout) in [
            // activation_function "gelu_new", resid_pdrop 0.1
            ("gpt2.json", Norm::LayerNorm, Act::GeluNew, true),
            // hidden_act "gelu", no hidden_dropout (GPTNeoXConfig's default 0.0)
            ("pythia-160m.json", Norm::LayerNorm, Act::Gelu, false),
            ("llama-2-7b.json", Norm::RmsNorm, Act::Silu, false),
            ("qwen2-0.5b.json", Norm::RmsNorm, Act::Silu, false),
            ("bert-base-uncased.json", Norm::LayerNorm, Act::Gelu, true),
        ] {
            let (shape, _) = load(&fixture(&format!("configs/{file}"))).expect(file);
            assert_eq!(shape.norm, Some(norm), "{file}");
            assert_eq!(shape.activation, Some(act), "{file}");
            assert_eq!(shape.residual_dropout, Some(dropout), "{file}");
        }
        // The probability itself decides, and an unknown activation is a fused GELU.
        let shape = shape_from_config(
            r#"{"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100,
                "resid_pdrop": 0.0, "activation_function": "mystery"}"#,
            "c.json",
        )
        .expect("gpt2");
        assert_eq!(shape.residual_dropout, Some(false));
        assert_eq!(shape.activation, Some(Act::Gelu));
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

    /// The committed shards are their headers only: a copy whose files are as long as their
    /// headers say (sparse, so nothing is written).
    fn sharded_model() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("dir");
        for e in std::fs::read_dir(fixture("safetensors-sharded")).expect("fixture") {
            let e = e.expect("entry");
            let to = dir.path().join(e.file_name());
            std::fs::copy(e.path(), &to).expect("copy");
            if to.extension().is_some_and(|x| x == "safetensors") {
                let bytes = std::fs::read(&to).expect("read");
                let (_, total) =
                    safetensors_header_counts(&bytes, "x", None).expect("a valid header");
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&to)
                    .expect("open");
                f.set_len(bytes.len() as u64 + total).expect("extend");
            }
        }
        dir
    }

    #[test]
    fn sharded_safetensors_headers_give_the_exact_count() {
        let model = sharded_model();
        let (shape, bytes) = load(model.path()).expect("model dir");
        assert_eq!(shape.family, "gpt2");
        assert_eq!(shape.params, 124_439_808);
        assert_eq!(bytes, Some(4 * 124_439_808));
    }

    #[test]
    fn bad_safetensors_headers_are_errors_not_panics() {
        let counts = |b: &[u8]| safetensors_header_counts(b, "x", None);
        assert!(counts(b"short").is_err());
        let mut huge = (u64::MAX).to_le_bytes().to_vec();
        huge.extend_from_slice(b"{}");
        assert!(counts(&huge).is_err());
        let mut cut = 100u64.to_le_bytes().to_vec();
        cut.extend_from_slice(b"{}");
        assert!(counts(&cut).is_err());
        let body = br#"{"w":{"dtype":"Q9","shape":[2],"data_offsets":[0,2]}}"#;
        let mut odd = (body.len() as u64).to_le_bytes().to_vec();
        odd.extend_from_slice(body);
        assert!(counts(&odd).is_err());
        let body =
            br#"{"w":{"dtype":"BF16","shape":[3,4],"data_offsets":[0,24]},"__metadata__":{}}"#;
        let mut ok = (body.len() as u64).to_le_bytes().to_vec();
        ok.extend_from_slice(body);
        assert_eq!(counts(&ok).expect("valid"), (12, 24));
    }

    fn header(body: &str) -> Vec<u8> {
        let mut out = (body.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(body.as_bytes());
        out
    }

    #[test]
    fn offsets_that_disagree_with_shapes_or_the_file_are_inconsistent() {
        let counts = |body: &str, len: Option<u64>| {
            safetensors_header_counts(&header(body), "m.safetensors", len)
        };
        for (body, len, says) in [
            // 4096 × 4096 F16 claiming 2 bytes (W4's 3.3 T parameters from 12 MB).
            (
                r#"{"w":{"dtype":"F16","shape":[4096,4096],"data_offsets":[0,2]}}"#,
                None,
                "is 33554432 bytes by its shape and dtype, but its data_offsets span 2",
            ),
            (
                r#"{"w":{"dtype":"F16","shape":[1],"data_offsets":[5,2]}}"#,
                None,
                "begins at 5, after its end 2",
            ),
            (
                r#"{"w":{"dtype":"F16","shape":[1]}}"#,
                None,
                "has no data_offsets",
            ),
            (
                r#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#,
                Some(8),
                "ends at byte 16 of the data, but the file holds 8",
            ),
            // Two tensors on the same bytes.
            (
                r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},
                    "b":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#,
                Some(16),
                "its tensors take 32 bytes, but the file holds 16",
            ),
        ] {
            let e = counts(body, len).expect_err(says).to_string();
            assert!(e.contains("the header is inconsistent"), "{e}");
            assert!(e.contains(says), "{e}");
        }
        let ok = r#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
        assert_eq!(counts(ok, Some(16)).expect("consistent"), (4, 16));
    }

    #[test]
    fn names_and_dtypes_from_a_header_are_escaped() {
        for body in [
            r#"{"\u001b]2;TNAME\u0007\u001b[2J": {"dtype":"F16","shape":[-1],"data_offsets":[0,2]}}"#,
            r#"{"w": {"dtype":"\u001b]2;STD\u0007","shape":[1],"data_offsets":[0,2]}}"#,
        ] {
            let e = safetensors_header_counts(&header(body), "m", None)
                .expect_err("bad")
                .to_string();
            assert!(!e.chars().any(crate::text::is_unsafe), "{e:?}");
            assert!(e.contains(r"\u{1b}]2;"), "{e}");
        }
        // A shard named with escapes in the index: its messages escape it too.
        let dir = sharded_model();
        let index = dir.path().join("model.safetensors.index.json");
        let text = std::fs::read_to_string(&index).expect("index").replace(
            "model-00002-of-00002.safetensors",
            r"\u001b]2;IDXPWN\u0007.safetensors",
        );
        std::fs::write(&index, text).expect("write");
        let e = load(dir.path()).expect_err("missing shard").to_string();
        assert!(!e.chars().any(crate::text::is_unsafe), "{e:?}");
        assert!(e.contains(r"\u{1b}]2;IDXPWN"), "{e}");
    }
}
