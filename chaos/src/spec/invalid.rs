//! A check that failed, and the checks both `check` (the rules of a file) and `build` (the values a
//! kind cannot do without) make.

use super::model::StepSpec;

/// A check that failed: the field's path and what is wrong.
pub(super) struct Invalid {
    pub(super) field: String,
    pub(super) message: String,
}

pub(super) fn invalid(field: String, message: impl Into<String>) -> Invalid {
    Invalid { field, message: message.into() }
}

/// The value of `field`, which the step's kind requires.
pub(super) fn required<T>(value: Option<T>, at: &str, field: &str, message: &str) -> Result<T, Invalid> {
    value.ok_or_else(|| invalid(format!("{at}.{field}"), message))
}

/// The step's `shape` among the kind's `shapes` (name, value), if set; an unknown name is refused
/// with the names the kind takes and the nearest one.
pub(super) fn shape<T: Copy>(
    spec: &StepSpec,
    at: &str,
    shapes: impl Iterator<Item = (&'static str, T)> + Clone,
) -> Result<Option<T>, Invalid> {
    let Some(given) = spec.shape.as_deref() else {
        return Ok(None);
    };
    if let Some((_, value)) = shapes.clone().find(|(name, _)| *name == given) {
        return Ok(Some(value));
    }
    let names = shapes.clone().map(|(name, _)| format!("`{name}`")).collect::<Vec<_>>().join(", ");
    let mut message = format!("unknown shape `{given}` for a `{}` step, expected one of {names}", spec.kind);
    if let Some(name) = nearest(given, shapes.map(|(name, _)| name)) {
        message.push_str(&format!("; did you mean `{name}`?"));
    }
    Err(invalid(format!("{at}.shape"), message))
}

/// The name among `names` nearest to `given`, if one is close enough to be a typo of it.
pub(super) fn nearest<'a>(given: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    names
        .map(|name| (strsim::levenshtein(given, name), name))
        .filter(|(d, name)| *d <= 2.max(name.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, name)| name)
}
