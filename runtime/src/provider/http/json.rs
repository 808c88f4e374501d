//! Borrowed-parse helpers the wires share: a token count read leniently, and a model name read
//! from the event's text without allocating ([`ModelName`]; every chunk may repeat it).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;

/// The token count at `key` of a usage object, when it is a non-negative integer: a count of
/// another type is left out rather than failing the call.
pub(crate) fn tokens(usage: &serde_json::Value, key: &str) -> Option<u64> {
    usage.get(key).and_then(serde_json::Value::as_u64)
}

/// A chunk's `model`, borrowed from the chunk's text: every chunk repeats it and only the first is
/// reported, so reading it costs no allocation. Anything but a string is `None`: a model of an
/// unexpected shape is left out, not a failed call.
#[derive(Debug, Default)]
pub(crate) struct ModelName<'a>(Option<Cow<'a, str>>);

impl ModelName<'_> {
    /// The name, when the value was a string.
    pub(crate) fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ModelName<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ModelNameVisitor(std::marker::PhantomData))
    }
}

struct ModelNameVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> serde::de::Visitor<'de> for ModelNameVisitor<'a> {
    type Value = ModelName<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a model name")
    }

    fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Self::Value, E> {
        Ok(ModelName(Some(Cow::Borrowed(name))))
    }

    fn visit_str<E>(self, name: &str) -> Result<Self::Value, E> {
        Ok(ModelName(Some(Cow::Owned(name.to_owned()))))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(ModelName(None))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(ModelName(None))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(ModelName(None))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(ModelName(None))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(ModelName(None))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(ModelName(None))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?.is_some() {}
        Ok(ModelName(None))
    }
}
