//! litellm's `model_prices_and_context_window.json`, read for the few fields prices need.
//!
//! The file is an object keyed by model name; each entry has, among many other fields,
//! `litellm_provider` and US dollars per token: `input_cost_per_token`, `output_cost_per_token`,
//! `cache_read_input_token_cost`, `cache_creation_input_token_cost`. The entries are read one at a
//! time and every other field is skipped unparsed, so that no entry of any shape (a string, a list,
//! a price that is text) fails the file: it only goes unpriced.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::price::Price;
use super::{ANTHROPIC, GEMINI, Prices, PricesError};

/// The most bytes of prices read: 16 MiB, ten times litellm's whole file (1.6 MB in 2026).
pub const MAX_PRICES_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The file at `path` as text, if it is no larger than [`MAX_PRICES_FILE_BYTES`].
pub(super) fn read_bounded(path: &Path) -> Result<String, PricesError> {
    let read_error = |source| PricesError::Read { path: path.to_owned(), source };
    let file = File::open(path).map_err(read_error)?;
    let too_large = |bytes| PricesError::TooLarge { bytes, limit: MAX_PRICES_FILE_BYTES };
    // A file that says it is too large is refused unread; the read is bounded anyway, for a file
    // that says nothing of its size (a pipe, a device) or grows while it is read.
    let claimed = file.metadata().map_err(read_error)?.len();
    if claimed > MAX_PRICES_FILE_BYTES {
        return Err(too_large(claimed));
    }
    let mut bytes = Vec::new();
    file.take(MAX_PRICES_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(read_error)?;
    if bytes.len() as u64 > MAX_PRICES_FILE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|error| {
        let at = error.utf8_error().valid_up_to();
        read_error(io::Error::new(io::ErrorKind::InvalidData, format!("byte {at} is not UTF-8: JSON is UTF-8 text")))
    })
}

/// The prices of litellm's JSON `text`.
pub(super) fn parse(text: &str) -> Result<Prices, PricesError> {
    if text.len() as u64 > MAX_PRICES_FILE_BYTES {
        return Err(PricesError::TooLarge { bytes: text.len() as u64, limit: MAX_PRICES_FILE_BYTES });
    }
    let Table(prices) = serde_json::from_str(text)?;
    if prices.is_empty() { Err(PricesError::NoPrices) } else { Ok(prices) }
}

/// The providers the runtime calls, as litellm names them: the target's provider, and the rank of
/// litellm's entry when two price one target (the lower wins): the Gemini API's own price before
/// Vertex AI's, since the runtime calls the Gemini API.
fn provider_of(litellm_provider: &str) -> Option<(&'static str, u8)> {
    match litellm_provider {
        "openai" => Some(("openai", 0)),
        "anthropic" => Some((ANTHROPIC, 0)),
        "gemini" => Some((GEMINI, 0)),
        "vertex_ai-language-models" => Some((GEMINI, 1)),
        _ => None,
    }
}

/// The whole file: prices as its entries are read.
struct Table(Prices);

impl<'de> Deserialize<'de> for Table {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(TableVisitor)
    }
}

struct TableVisitor;

impl<'de> Visitor<'de> for TableVisitor {
    type Value = Table;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object keyed by model name, as litellm's model_prices_and_context_window.json")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Table, A::Error> {
        let mut ranked: HashMap<String, (u8, Price)> = HashMap::new();
        while let Some(key) = entries.next_key::<String>()? {
            let entry: Entry = entries.next_value()?;
            let Some((target, rank, price)) = entry.priced(&key) else { continue };
            match ranked.get(&target) {
                Some((held, _)) if *held <= rank => {}
                _ => {
                    ranked.insert(target, (rank, price));
                }
            }
        }
        let mut prices = Prices::new();
        for (target, (_, price)) in ranked {
            prices.insert(target, price);
        }
        Ok(Table(prices))
    }
}

/// The fields of one entry that prices read; `None` where the entry has no such field (or no text
/// for the provider).
#[derive(Default)]
struct Entry {
    provider: Option<String>,
    input: Option<f64>,
    output: Option<f64>,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
    /// Whether a price field holds something other than a number: the entry prices nothing.
    unreadable: bool,
}

impl Entry {
    /// The target, rank and price of this entry, keyed `key`: `None` when it prices no model the
    /// runtime calls.
    fn priced(self, key: &str) -> Option<(String, u8, Price)> {
        if self.unreadable {
            return None;
        }
        let litellm_provider = self.provider?;
        let (provider, rank) = provider_of(&litellm_provider)?;
        // `gemini/gemini-2.0-flash` of `gemini`, `gpt-4o-mini` of `openai`: the model, either way.
        let model = key.strip_prefix(litellm_provider.as_str()).and_then(|rest| rest.strip_prefix('/')).unwrap_or(key);
        if model.is_empty() {
            return None;
        }
        let per_million = |per_token: f64| per_token * 1e6;
        let mut price = Price::per_million(per_million(self.input?), per_million(self.output?)).ok()?;
        if let Some(cached) = self.cache_read {
            price = price.with_cached_input(per_million(cached)).ok()?;
        }
        if let Some(write) = self.cache_write {
            price = price.with_cache_write(per_million(write)).ok()?;
        }
        Some((format!("{provider}/{model}"), rank, price))
    }
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EntryVisitor)
    }
}

/// Reads an entry of any shape: an object's fields, and nothing of anything else.
struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = Entry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a model's entry")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut fields: A) -> Result<Entry, A::Error> {
        let mut entry = Entry::default();
        while let Some(field) = fields.next_key::<Field>()? {
            let price = match field {
                Field::Provider => {
                    entry.provider = fields.next_value::<Value>()?.as_str().map(str::to_owned);
                    continue;
                }
                Field::Input => &mut entry.input,
                Field::Output => &mut entry.output,
                Field::CacheRead => &mut entry.cache_read,
                Field::CacheWrite => &mut entry.cache_write,
                Field::Other => {
                    fields.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            let value: Value = fields.next_value()?;
            *price = value.as_f64();
            entry.unreadable |= price.is_none();
        }
        Ok(entry)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Entry, A::Error> {
        while items.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Entry::default())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Entry, E> {
        Ok(Entry::default())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Entry, E> {
        Ok(Entry::default())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Entry, E> {
        Ok(Entry::default())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Entry, E> {
        Ok(Entry::default())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Entry, E> {
        Ok(Entry::default())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Entry, E> {
        Ok(Entry::default())
    }
}

/// An entry's field, by name: the few prices read, and the rest.
enum Field {
    Provider,
    Input,
    Output,
    CacheRead,
    CacheWrite,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(FieldVisitor)
    }
}

struct FieldVisitor;

impl Visitor<'_> for FieldVisitor {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field's name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Field, E> {
        Ok(match name {
            "litellm_provider" => Field::Provider,
            "input_cost_per_token" => Field::Input,
            "output_cost_per_token" => Field::Output,
            "cache_read_input_token_cost" => Field::CacheRead,
            "cache_creation_input_token_cost" => Field::CacheWrite,
            _ => Field::Other,
        })
    }
}
