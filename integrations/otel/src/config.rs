//! The export configuration the standard `OTEL_*` environment variables describe.
//!
//! Only what decides *whether and where* to export is read here, so that it can be checked before
//! anything starts and tested without touching the process environment. The exporter itself
//! still reads `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT` and
//! `OTEL_EXPORTER_OTLP_COMPRESSION` (and their per-signal forms); the SDK reads
//! `OTEL_RESOURCE_ATTRIBUTES` and the `OTEL_BSP_*` batch settings.

use crate::error::OtelError;

/// The endpoint for every signal: `/v1/traces` and `/v1/metrics` are appended to it.
pub(super) const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
const PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
const SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
const RESOURCE_ATTRIBUTES: &str = "OTEL_RESOURCE_ATTRIBUTES";
const SDK_DISABLED: &str = "OTEL_SDK_DISABLED";

/// The only protocol this build speaks (the specification's name for it).
const HTTP_PROTOBUF: &str = "http/protobuf";

/// One signal's variables: its own endpoint (used as is), its own protocol, and the path
/// appended to [`ENDPOINT`] when its own endpoint is not set.
struct Signal {
    endpoint: &'static str,
    protocol: &'static str,
    path: &'static str,
}

const TRACES: Signal = Signal {
    endpoint: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    protocol: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    path: "v1/traces",
};
const METRICS: Signal = Signal {
    endpoint: "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    protocol: "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    path: "v1/metrics",
};

/// Where to export, and as which service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Config {
    /// The full URL spans are posted to, if they are exported.
    pub(super) traces: Option<String>,
    /// The full URL metrics are posted to, if they are exported.
    pub(super) metrics: Option<String>,
    /// `service.name` when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` names
    /// it (the SDK's detectors take those): the program's name.
    pub(super) default_service_name: Option<String>,
}

impl Config {
    /// The configuration `env` describes (an empty variable counts as unset), `None` when no
    /// endpoint is set or `OTEL_SDK_DISABLED=true`, or what is wrong with it.
    pub(super) fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Self>, OtelError> {
        let env = |name: &str| env(name).map(|value| value.trim().to_owned()).filter(|value| !value.is_empty());
        if env(SDK_DISABLED).is_some_and(|value| value.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let traces = endpoint(&env, &TRACES)?;
        let metrics = endpoint(&env, &METRICS)?;
        if traces.is_none() && metrics.is_none() {
            return Ok(None);
        }
        let named = env(SERVICE_NAME).is_some()
            || env(RESOURCE_ATTRIBUTES).is_some_and(|attributes| {
                attributes.split(',').any(|pair| pair.split('=').next().map(str::trim) == Some("service.name"))
            });
        Ok(Some(Self { traces, metrics, default_service_name: if named { None } else { Some(program_name()) } }))
    }
}

/// The URL one signal is posted to: its own endpoint as is, else the shared one with the
/// signal's path appended (the OTLP exporter specification's rule), after checking the protocol.
fn endpoint(env: &dyn Fn(&str) -> Option<String>, signal: &Signal) -> Result<Option<String>, OtelError> {
    let (variable, url) = match (env(signal.endpoint), env(ENDPOINT)) {
        (Some(url), _) => (signal.endpoint, url),
        (None, Some(base)) => (ENDPOINT, format!("{}/{}", base.trim_end_matches('/'), signal.path)),
        (None, None) => return Ok(None),
    };
    for protocol in [signal.protocol, PROTOCOL] {
        match env(protocol) {
            Some(value) if value != HTTP_PROTOBUF => {
                return Err(OtelError::UnsupportedProtocol { variable: protocol, value });
            }
            Some(_) => break,
            None => {}
        }
    }
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
    if rest.is_none_or(|rest| rest.is_empty() || rest.starts_with('/')) {
        let value = env(variable).unwrap_or_default();
        return Err(OtelError::InvalidEndpoint { variable, value });
    }
    Ok(Some(url))
}

/// The running program's file name without its extension, or `agentic`.
fn program_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|path| path.file_stem().and_then(|stem| stem.to_str()).map(str::to_owned))
        .unwrap_or_else(|| "agentic".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Option<Config>, OtelError> {
        Config::from_env(&|name| vars.iter().find(|(key, _)| *key == name).map(|(_, value)| (*value).to_owned()))
    }

    #[test]
    fn nothing_set_or_disabled_exports_nothing() {
        assert_eq!(config(&[]).unwrap(), None);
        assert_eq!(config(&[(ENDPOINT, "  ")]).unwrap(), None);
        assert_eq!(config(&[(ENDPOINT, "http://c:4318"), (SDK_DISABLED, "TRUE")]).unwrap(), None);
    }

    #[test]
    fn the_shared_endpoint_gets_each_signals_path_and_a_signals_own_is_kept() {
        let both = config(&[(ENDPOINT, "http://collector:4318/")]).unwrap().unwrap();
        assert_eq!(both.traces.as_deref(), Some("http://collector:4318/v1/traces"));
        assert_eq!(both.metrics.as_deref(), Some("http://collector:4318/v1/metrics"));
        let traces_only = config(&[(TRACES.endpoint, "https://c.example/otlp/spans")]).unwrap().unwrap();
        assert_eq!(traces_only.traces.as_deref(), Some("https://c.example/otlp/spans"));
        assert_eq!(traces_only.metrics, None);
    }

    #[test]
    fn the_service_name_defaults_to_the_program_unless_the_environment_names_it() {
        let default = config(&[(ENDPOINT, "http://c:4318")]).unwrap().unwrap();
        assert!(default.default_service_name.is_some_and(|name| !name.is_empty()));
        let named = config(&[(ENDPOINT, "http://c:4318"), (SERVICE_NAME, "svc")]).unwrap().unwrap();
        assert_eq!(named.default_service_name, None);
        let attributes = [(ENDPOINT, "http://c:4318"), (RESOURCE_ATTRIBUTES, "team=a, service.name=svc")];
        assert_eq!(config(&attributes).unwrap().unwrap().default_service_name, None);
    }

    #[test]
    fn grpc_json_and_non_urls_are_refused_with_the_fix() {
        for (variable, value) in [(PROTOCOL, "grpc"), (TRACES.protocol, "http/json")] {
            let error = config(&[(ENDPOINT, "http://c:4317"), (variable, value)]).unwrap_err();
            let message = error.to_string();
            assert!(message.starts_with(&format!("{variable}={value} is not supported")), "{message}");
            assert!(message.contains("set it to http/protobuf"), "{message}");
        }
        // A signal's own protocol wins over the shared one.
        let fine = [
            (ENDPOINT, "http://c:4318"),
            (PROTOCOL, "grpc"),
            (TRACES.protocol, HTTP_PROTOBUF),
            (METRICS.protocol, HTTP_PROTOBUF),
        ];
        assert!(config(&fine).unwrap().is_some());
        for url in ["localhost:4318", "http://", "ftp://c"] {
            let error = config(&[(ENDPOINT, url)]).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("{ENDPOINT}={url} is not an http(s) URL: set it to e.g. http://localhost:4318")
            );
        }
    }
}
