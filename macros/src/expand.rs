//! Code generation: find the runtime parameter, rewrite its `exec` calls, add the docs line.
//!
//! The pipeline is parse (`attr`), judge (`valid`), expand (here). When anything is wrong the
//! function is emitted unchanged, followed by one `compile_error!` per problem, so the user sees
//! every problem at once and no error in code they did not write.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt as _;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::visit_mut::{self, VisitMut};
use syn::{
    Arm, AttrStyle, Attribute, Block, Error, Expr, ExprClosure, ExprForLoop, ExprIf, ExprLit, ExprMethodCall, ExprPath,
    ExprWhile, FnArg, Ident, Item, ItemFn, Lit, Local, Macro, Meta, Pat, Stmt, Token, Type,
};

use crate::attr::{self, Args, PresetValue};
use crate::rules::limits::{LimitKey, describe_limits};
use crate::rules::{Jitter, Key, PolicyValues, describe_layers, describe_worst_case};
use crate::valid;

/// The attribute: `args` are the tokens inside `#[agentic_function(...)]`, `item` what it is on.
pub(crate) fn agentic_function(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Vec::new();
    let args = attr::parse(args, &mut errors);
    let values = valid::check(&args, &mut errors);
    let limits = valid::check_limits(&args, &mut errors);
    let function = match syn::parse2::<Item>(item.clone()) {
        Ok(Item::Fn(function)) => Some(function),
        Ok(other) => {
            errors.push(not_a_function(&other));
            None
        }
        // Not an item rustc would accept either: leave the diagnosis to rustc.
        Err(_) => {
            errors.push(Error::new(attr::attribute_span(), "`#[agentic_function]` can only be used on an `async fn`"));
            None
        }
    };
    let runtime = function.as_ref().and_then(|function| check_signature(function, &mut errors));
    match (function, runtime, combine(errors)) {
        (Some(function), Some(runtime), None) => expand(function, &runtime, &args, &values, &limits),
        (_, _, error) => {
            let errors = error.map(|error| error.to_compile_error());
            quote! { #item #errors }
        }
    }
}

fn combine(errors: Vec<Error>) -> Option<Error> {
    errors.into_iter().reduce(|mut all, error| {
        all.combine(error);
        all
    })
}

/// The attribute on a struct, a const, a trait method without a body...: blame the attribute.
fn not_a_function(item: &Item) -> Error {
    let what = match item {
        Item::Const(_) => "a `const`",
        Item::Enum(_) => "an enum",
        Item::ExternCrate(_) => "an `extern crate`",
        Item::ForeignMod(_) => "an `extern` block",
        Item::Impl(_) => "an `impl` block",
        Item::Macro(_) => "a macro",
        Item::Mod(_) => "a module",
        Item::Static(_) => "a `static`",
        Item::Struct(_) => "a struct",
        Item::Trait(_) | Item::TraitAlias(_) => "a trait",
        Item::Type(_) => "a type alias",
        Item::Union(_) => "a union",
        Item::Use(_) => "a `use`",
        Item::Verbatim(tokens) if syn::parse2::<syn::TraitItemFn>(tokens.clone()).is_ok() => {
            return Error::new(
                attr::attribute_span(),
                "`#[agentic_function]` needs a function with a body; put it on the `async fn` in the `impl` block",
            );
        }
        _ => "this item",
    };
    Error::new(
        attr::attribute_span(),
        format!("`#[agentic_function]` can only be used on an `async fn`, not on {what}"),
    )
}

/// How the runtime parameter is taken, which decides how it is passed to the call it rewrites.
enum Taken {
    Owned,
    Borrowed,
}

struct RuntimeParam {
    ident: Ident,
    taken: Taken,
}

/// Checks `async` and finds the one runtime parameter.
fn check_signature(function: &ItemFn, errors: &mut Vec<Error>) -> Option<RuntimeParam> {
    let sig = &function.sig;
    let name = sig.ident.unraw();
    if sig.asyncness.is_none() {
        errors.push(Error::new(
            sig.fn_token.span,
            format!("`#[agentic_function]` needs an `async fn`; write `async fn {name}`"),
        ));
    }
    let mut found: Option<(RuntimeParam, &syn::PatType)> = None;
    let mut ok = true;
    for input in &sig.inputs {
        let FnArg::Typed(param) = input else { continue };
        let Some(taken) = runtime_type(&param.ty) else { continue };
        if let Some((first, _)) = &found {
            errors.push(Error::new_spanned(
                param,
                format!(
                    "`{name}` has a second runtime parameter; `#[agentic_function]` rewrites the `exec` calls of \
                     one runtime, and `{}` is already that one",
                    first.ident
                ),
            ));
            ok = false;
            continue;
        }
        match &*param.pat {
            Pat::Ident(binding) if binding.subpat.is_none() => {
                found = Some((RuntimeParam { ident: binding.ident.clone(), taken }, param));
            }
            pattern => {
                errors.push(Error::new_spanned(
                    pattern,
                    "the runtime parameter needs a name for `#[agentic_function]` to find its `exec` calls; \
                     write e.g. `runtime: &Runtime`",
                ));
                ok = false;
            }
        }
    }
    if found.is_none() && ok {
        let near = sig.inputs.iter().find_map(|input| match input {
            FnArg::Typed(param) if mentions_runtime(param.ty.to_token_stream()) => Some(&param.ty),
            _ => None,
        });
        let message = match near {
            Some(ty) => format!(
                "`#[agentic_function]` needs a parameter of type `Runtime`, `&Runtime` or `&mut Runtime`, \
                 found `{}`; take `&Runtime` instead",
                attr::show(&ty.to_token_stream().into_iter().collect::<Vec<_>>())
            ),
            None => {
                format!("`#[agentic_function]` needs a runtime parameter, e.g. `runtime: &Runtime`; `{name}` has none")
            }
        };
        errors.push(Error::new(sig.ident.span(), message));
    }
    found.filter(|_| ok).map(|(param, _)| param)
}

/// `Runtime`, `&Runtime` or `&mut Runtime`, under any path (`agentic_runtime::Runtime`, `rt::Runtime`).
fn runtime_type(ty: &Type) -> Option<Taken> {
    match ty {
        Type::Reference(reference) => is_runtime(&reference.elem).then_some(Taken::Borrowed),
        Type::Paren(inner) => runtime_type(&inner.elem),
        Type::Group(inner) => runtime_type(&inner.elem),
        other => is_runtime(other).then_some(Taken::Owned),
    }
}

fn is_runtime(ty: &Type) -> bool {
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            path.path.segments.last().is_some_and(|last| last.ident == "Runtime" && last.arguments.is_none())
        }
        Type::Paren(inner) => is_runtime(&inner.elem),
        Type::Group(inner) => is_runtime(&inner.elem),
        _ => false,
    }
}

fn mentions_runtime(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|tree| match tree {
        proc_macro2::TokenTree::Ident(ident) => ident == "Runtime",
        proc_macro2::TokenTree::Group(group) => mentions_runtime(group.stream()),
        _ => false,
    })
}

/// The name of the generated constant that holds the function's `AgentFn`.
const FUNCTION_CONST: &str = "__AGENTIC_FUNCTION";

fn expand(
    mut function: ItemFn,
    runtime: &RuntimeParam,
    args: &Args,
    values: &PolicyValues,
    limits: &[(LimitKey, f64)],
) -> TokenStream {
    let krate = match &args.krate {
        Some(arg) => arg.value.to_token_stream(),
        None => quote!(::agentic_runtime),
    };
    let private = quote!(#krate::__private);
    let name = function.sig.ident.unraw().to_string();
    let doc = doc_text(&function.attrs);

    let mut judge = None;
    let (policy, call_policy) = match args.preset.as_ref().map(|arg| &arg.value) {
        // A constant in the function cannot name `Self`: each call sets the policy instead, and the
        // exec judges it (the constant's is never used).
        Some(PresetValue::Path(path)) if names_self(path) => {
            (quote!(#private::RetryPolicy::new()), Some(policy_expr(path.to_token_stream(), args, &private)))
        }
        Some(PresetValue::Path(path)) => {
            judge = Some(judge_const_policy(path, &private, &name));
            (policy_expr(path.to_token_stream(), args, &private), None)
        }
        Some(PresetValue::Named(preset)) => {
            let variant = Ident::new(preset.variant(), Span::call_site());
            (policy_expr(quote!(#private::RetryPolicy::preset(#private::Preset::#variant)), args, &private), None)
        }
        None => (policy_expr(quote!(#private::RetryPolicy::new()), args, &private), None),
    };
    let mut rewriter = Rewriter {
        runtime,
        private: &private,
        policy: call_policy.as_ref(),
        validate: args.validate.as_ref().map(|arg| &arg.value),
        compact: args.compact.as_ref().map(|arg| &arg.value),
        tools: args.tools.as_ref().map(|arg| &arg.value),
        shadowed: false,
        rewritten: 0,
    };
    rewriter.visit_block_mut(&mut function.block);

    if rewriter.rewritten > 0 {
        let constant = Ident::new(FUNCTION_CONST, Span::call_site());
        let limits_expr = limits_expr(limits, &private);
        let doc = match &doc {
            Some(text) => quote!(::core::option::Option::Some(#text)),
            None => quote!(::core::option::Option::None),
        };
        let item: Stmt = syn::parse_quote! {
            const #constant: #private::AgentFn = #private::AgentFn {
                name: ::core::option::Option::Some(#name),
                doc: #doc,
                policy: #policy,
                validate: ::core::option::Option::None,
                compact: ::core::option::Option::None,
                tools: ::core::option::Option::None,
                limits: #limits_expr,
            };
        };
        function.block.stmts.insert(0, item);
        if let Some(judge) = judge {
            function.block.stmts.insert(1, judge);
        }
    }

    let mut line = docs_line(args, values);
    if let Some(limits) = describe_limits(limits) {
        line.push_str(&format!(" **Spend limits:** {limits}."));
    }
    if doc.is_some() {
        function.attrs.push(syn::parse_quote!(#[doc = ""]));
    }
    function.attrs.push(syn::parse_quote!(#[doc = #line]));
    function.into_token_stream()
}

/// The line added to the function's docs: the worst case, or the `const` preset it starts from.
fn docs_line(args: &Args, values: &PolicyValues) -> String {
    let jitter = args.jitter.as_ref().map_or_else(Jitter::default, |arg| arg.value);
    match args.preset.as_ref().map(|arg| &arg.value) {
        Some(PresetValue::Path(path)) => {
            let mut keys: Vec<String> =
                args.numbers.iter().map(|(_, arg)| attr::show_stream(arg.tokens.clone())).collect();
            keys.extend(args.jitter.as_ref().map(|arg| attr::show_stream(arg.tokens.clone())));
            let with = if keys.is_empty() { String::new() } else { format!(", with `{}`", keys.join("`, `")) };
            format!("**Retry policy:** `{}`{with}.", attr::show_stream(path.to_token_stream()))
        }
        Some(PresetValue::Named(preset)) => format!(
            "**Retry policy:** preset `{preset}`: {}: {}.",
            describe_layers(values),
            describe_worst_case(values, jitter)
        ),
        None => format!("**Retry policy:** {}: {}.", describe_layers(values), describe_worst_case(values, jitter)),
    }
}

/// `UsageLimits::NONE` followed by a `with_*` call for each limit the attribute sets (each judged
/// valid: a count is whole and at most 2^53, dollars finite).
fn limits_expr(limits: &[(LimitKey, f64)], private: &TokenStream) -> TokenStream {
    let mut expr = quote!(#private::UsageLimits::NONE);
    for &(key, value) in limits {
        let value = if key.is_count() { Literal::u64_unsuffixed(value as u64) } else { Literal::f64_unsuffixed(value) };
        let setter = Ident::new(&format!("with_{}", key.name()), Span::call_site());
        expr = quote!(#expr.#setter(#value));
    }
    expr
}

/// Whether a `preset` path starts at `Self` (`Self::POLICY`).
fn names_self(path: &ExprPath) -> bool {
    path.path.segments.first().is_some_and(|first| first.ident == "Self")
}

/// An assertion that a `const` preset's policy, with the attribute's keys set, keeps every rule:
/// an unnamed constant, which rustc evaluates whenever the function compiles (`cargo check` too),
/// since the attribute cannot read the constant's values itself.
fn judge_const_policy(path: &ExprPath, private: &TokenStream, name: &str) -> Stmt {
    let message = format!(
        "the policy of `{name}` (`preset = {}` and the keys beside it) breaks a rule of \
         `RetryPolicy::validate`; call `.validate()` on it to see which",
        attr::show_stream(path.to_token_stream())
    );
    let constant = Ident::new(FUNCTION_CONST, Span::call_site());
    syn::parse_quote_spanned! {path.span()=>
        const _: () = ::core::assert!(#private::is_valid(#constant.policy.values()), #message);
    }
}

/// `base` (a `RetryPolicy`) followed by a `with_*` call for each key the attribute sets.
fn policy_expr(base: TokenStream, args: &Args, private: &TokenStream) -> TokenStream {
    let mut policy = base;
    for (key, arg) in &args.numbers {
        let n = Literal::u64_unsuffixed(arg.value);
        let (setter, value) = match key {
            Key::MaxRetries => ("with_max_retries", quote!(#n)),
            Key::SessionRetries => ("with_session_retries", quote!(#n)),
            Key::SessionBaseDelayMs => ("with_session_base_delay_ms", quote!(#n)),
            Key::ExecBaseDelayMs => ("with_exec_base_delay_ms", quote!(#n)),
            Key::MaxDelayMs => ("with_max_delay_ms", quote!(::core::option::Option::Some(#n))),
            Key::MaxCalls => ("with_max_calls", quote!(::core::option::Option::Some(#n))),
            Key::TimeoutMs => ("with_timeout_ms", quote!(#n)),
            Key::BudgetMs => ("with_budget_ms", quote!(::core::option::Option::Some(#n))),
            Key::RetryAfterCapMs => ("with_retry_after_cap_ms", quote!(#n)),
            Key::ConnectTimeoutMs => ("with_connect_timeout_ms", quote!(#n)),
            Key::HeadersTimeoutMs => ("with_headers_timeout_ms", quote!(#n)),
            Key::FirstTokenTimeoutMs => ("with_first_token_timeout_ms", quote!(#n)),
            Key::IdleTimeoutMs => ("with_idle_timeout_ms", quote!(#n)),
            Key::TurnTimeoutMs => ("with_turn_timeout_ms", quote!(#n)),
            Key::MaxAnswerBytes => ("with_max_answer_bytes", quote!(#n)),
            Key::Jitter => continue,
        };
        let setter = Ident::new(setter, Span::call_site());
        policy = quote!(#policy.#setter(#value));
    }
    if let Some(jitter) = &args.jitter {
        let variant = Ident::new(jitter.value.variant(), Span::call_site());
        policy = quote!(#policy.with_jitter(#private::Jitter::#variant));
    }
    policy
}

/// The doc comment as one text: lines joined with `\n`, one leading space per line removed, trimmed.
/// `#[doc = include_str!(..)]` and other non-literal docs are left out.
fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs {
        if attr.style != AttrStyle::Outer || !attr.path().is_ident("doc") {
            continue;
        }
        if let Meta::NameValue(pair) = &attr.meta {
            if let Expr::Lit(ExprLit { lit: Lit::Str(text), .. }) = &pair.value {
                for line in text.value().split('\n') {
                    let line = line.strip_suffix('\r').unwrap_or(line);
                    lines.push(line.strip_prefix(' ').unwrap_or(line).to_owned());
                }
            }
        }
    }
    let text = lines.join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// Rewrites `<runtime>.exec(prompt)`, `<runtime>.exec_stream(prompt)`, `<runtime>.exec_json(prompt)`
/// (with or without a turbofish) and `<runtime>.request(prompt)` (and so every chain on it) into the same call with the prompt
/// `Prompt::__agentic_in(prompt, <AgentFn>)`, which hands the exec the function, wherever the name still means the runtime parameter: not after a `let` or a pattern rebinds it,
/// not in nested items (they cannot see it). Macro arguments are rewritten when they parse as
/// comma-separated expressions (`assert!`, `tokio::join!`, `format!`, ...).
struct Rewriter<'a> {
    runtime: &'a RuntimeParam,
    private: &'a TokenStream,
    /// The policy each call sets, when it is a `const` preset's.
    policy: Option<&'a TokenStream>,
    validate: Option<&'a ExprPath>,
    compact: Option<&'a ExprPath>,
    tools: Option<&'a ExprPath>,
    /// Whether the runtime's name is rebound at this point.
    shadowed: bool,
    rewritten: usize,
}

impl Rewriter<'_> {
    fn binds(&self, pat: &Pat) -> bool {
        binds(pat, &self.runtime.ident)
    }

    /// The call that replaces `receiver.exec(prompt)`.
    fn rewrite(&mut self, call: &ExprMethodCall) -> Expr {
        self.rewritten += 1;
        let span = call.method.span();
        let private = self.private;
        let ident = &self.runtime.ident;
        let runtime = match self.runtime.taken {
            Taken::Owned => quote_spanned!(span=> &#ident),
            Taken::Borrowed => quote_spanned!(span=> &*#ident),
        };
        let constant = Ident::new(FUNCTION_CONST, Span::call_site());
        // Set here rather than in the constant: a path here may name `Self` and the function's
        // generics (`validate = Self::check`, `compact = Self::COMPACTOR`).
        let mut fields = Vec::new();
        if let Some(policy) = self.policy {
            fields.push(quote!(policy: #policy));
        }
        if let Some(path) = self.validate {
            // A non-capturing closure, coerced to the fn pointer. The path is first coerced to a fn
            // pointer, so that a wrong signature is reported as "expected fn pointer
            // `for<'a> fn(&'a Reply) -> Result<(), _>`, found ...".
            let adapter = quote_spanned! {path.span()=>
                |__agentic_reply: &#private::Reply| -> ::core::result::Result<(), ::std::string::String> {
                    let __agentic_check: fn(&#private::Reply) -> ::core::result::Result<(), _> = #path;
                    match __agentic_check(__agentic_reply) {
                        ::core::result::Result::Ok(()) => ::core::result::Result::Ok(()),
                        ::core::result::Result::Err(__agentic_error) => {
                            ::core::result::Result::Err(::std::string::ToString::to_string(&__agentic_error))
                        }
                    }
                }
            };
            fields.push(quote!(validate: ::core::option::Option::Some(#adapter)));
        }
        if let Some(path) = self.compact {
            // A type that is no compactor is reported on the path: "the trait bound `X: Compactor`
            // is not satisfied".
            let compactor = quote_spanned! {path.span()=> {
                let __agentic_compactor: &'static dyn #private::Compactor = &#path;
                __agentic_compactor
            }};
            fields.push(quote!(compact: ::core::option::Option::Some(#compactor)));
        }
        if let Some(path) = self.tools {
            // A non-capturing closure, coerced to the fn pointer: the path may name `Self`. A type
            // that is no toolbox is reported on the path (`ToolsOf` says what `tools` takes).
            let tools = quote_spanned! {path.span()=>
                (|| #private::ToolsOf::toolbox(&#path)) as fn() -> ::core::option::Option<#private::Toolbox>
            };
            fields.push(quote!(tools: ::core::option::Option::Some(#tools)));
        }
        let function =
            if fields.is_empty() { quote!(#constant) } else { quote!(#private::AgentFn { #(#fields,)* ..#constant }) };
        // The public method itself, the function handed over in the prompt: the call stays what the
        // user wrote (its compile errors name `Runtime::exec_json`, `Runtime::request`, ...), and
        // the exec runs as the function.
        let mut rewritten = call.clone();
        rewritten.receiver = Box::new(syn::parse_quote_spanned!(span=> (#runtime)));
        let prompt = &call.args[0];
        rewritten.args = syn::parse_quote_spanned! {span=>
            #private::Prompt::__agentic_in(::core::convert::Into::into(#prompt), #function)
        };
        Expr::MethodCall(rewritten)
    }

    fn is_runtime_exec(&self, call: &ExprMethodCall) -> bool {
        // Each takes the prompt alone; `exec_json` may name its type (`exec_json::<Invoice>`).
        let named = matches!(
            (call.method.to_string().as_str(), &call.turbofish),
            ("exec" | "exec_stream" | "request", None) | ("exec_json", _)
        );
        if !named || self.shadowed || call.args.len() != 1 {
            return false;
        }
        let mut receiver = &*call.receiver;
        while let Expr::Paren(inner) = receiver {
            receiver = &inner.expr;
        }
        matches!(receiver, Expr::Path(path) if path.qself.is_none() && path.attrs.is_empty()
            && path.path.is_ident(&self.runtime.ident))
    }

    /// Visits `if` / `while` conditions: the names a `let` binds are in scope in the rest of the
    /// `&&` chain and in the body.
    fn visit_condition(&mut self, cond: &mut Expr) {
        match cond {
            Expr::Let(binding) => {
                self.visit_expr_mut(&mut binding.expr);
                if self.binds(&binding.pat) {
                    self.shadowed = true;
                }
            }
            Expr::Binary(binary) if matches!(binary.op, syn::BinOp::And(_)) => {
                self.visit_condition(&mut binary.left);
                self.visit_condition(&mut binary.right);
            }
            other => self.visit_expr_mut(other),
        }
    }
}

impl VisitMut for Rewriter<'_> {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        visit_mut::visit_expr_mut(self, expr);
        if let Expr::MethodCall(call) = expr {
            if self.is_runtime_exec(call) {
                *expr = self.rewrite(call);
            }
        }
    }

    fn visit_block_mut(&mut self, block: &mut Block) {
        let outer = self.shadowed;
        for stmt in &mut block.stmts {
            match stmt {
                Stmt::Local(local) => self.visit_local_mut(local),
                Stmt::Item(_) => {}
                other => self.visit_stmt_mut(other),
            }
        }
        self.shadowed = outer;
    }

    /// `let pat = init else { .. };`: the init and the else block still see the outer name; what
    /// follows in the block sees the new binding (restored by `visit_block_mut`).
    fn visit_local_mut(&mut self, local: &mut Local) {
        if let Some(init) = &mut local.init {
            self.visit_expr_mut(&mut init.expr);
            if let Some((_, diverge)) = &mut init.diverge {
                self.visit_expr_mut(diverge);
            }
        }
        if self.binds(&local.pat) {
            self.shadowed = true;
        }
    }

    fn visit_item_mut(&mut self, _item: &mut Item) {}

    fn visit_expr_closure_mut(&mut self, closure: &mut ExprClosure) {
        let outer = self.shadowed;
        if closure.inputs.iter().any(|pat| self.binds(pat)) {
            self.shadowed = true;
        }
        self.visit_expr_mut(&mut closure.body);
        self.shadowed = outer;
    }

    fn visit_arm_mut(&mut self, arm: &mut Arm) {
        let outer = self.shadowed;
        if self.binds(&arm.pat) {
            self.shadowed = true;
        }
        // syn 3 keeps an arm's guard in its pattern (`Some(x) if x > 0`); it sees the arm's bindings.
        if let Pat::Guard(guarded) = &mut arm.pat {
            self.visit_expr_mut(&mut guarded.guard);
        }
        self.visit_expr_mut(&mut arm.body);
        self.shadowed = outer;
    }

    fn visit_expr_for_loop_mut(&mut self, each: &mut ExprForLoop) {
        self.visit_expr_mut(&mut each.expr);
        let outer = self.shadowed;
        if self.binds(&each.pat) {
            self.shadowed = true;
        }
        self.visit_block_mut(&mut each.body);
        self.shadowed = outer;
    }

    fn visit_expr_if_mut(&mut self, branch: &mut ExprIf) {
        let outer = self.shadowed;
        self.visit_condition(&mut branch.cond);
        self.visit_block_mut(&mut branch.then_branch);
        self.shadowed = outer;
        if let Some((_, otherwise)) = &mut branch.else_branch {
            self.visit_expr_mut(otherwise);
        }
    }

    fn visit_expr_while_mut(&mut self, repeat: &mut ExprWhile) {
        let outer = self.shadowed;
        self.visit_condition(&mut repeat.cond);
        self.visit_block_mut(&mut repeat.body);
        self.shadowed = outer;
    }

    fn visit_macro_mut(&mut self, mac: &mut Macro) {
        let parser = Punctuated::<Expr, Token![,]>::parse_terminated;
        let Ok(mut exprs) = mac.parse_body_with(parser) else { return };
        let before = self.rewritten;
        for expr in &mut exprs {
            self.visit_expr_mut(expr);
        }
        if self.rewritten > before {
            mac.tokens = exprs.into_token_stream();
        }
    }
}

/// Whether `pat` binds `name`.
fn binds(pat: &Pat, name: &Ident) -> bool {
    match pat {
        Pat::Ident(binding) => {
            binding.ident == *name || binding.subpat.as_ref().is_some_and(|(_, sub)| binds(sub, name))
        }
        Pat::Or(or) => or.cases.iter().any(|case| binds(case, name)),
        Pat::Paren(inner) => binds(&inner.pat, name),
        Pat::Reference(inner) => binds(&inner.pat, name),
        Pat::Slice(slice) => slice.elems.iter().any(|elem| binds(elem, name)),
        Pat::Struct(fields) => fields.fields.iter().any(|field| binds(&field.pat, name)),
        Pat::Tuple(tuple) => tuple.elems.iter().any(|elem| binds(elem, name)),
        Pat::TupleStruct(tuple) => tuple.elems.iter().any(|elem| binds(elem, name)),
        Pat::Type(typed) => binds(&typed.pat, name),
        Pat::Guard(guarded) => binds(&guarded.pat, name),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(args: &str) -> String {
        let item = "/// Doc.\nasync fn f(runtime: &Runtime) -> Result<Reply, ExecError> { runtime.exec(\"x\").await }";
        agentic_function(args.parse().expect("args lex"), item.parse().expect("item lexes")).to_string()
    }

    #[test]
    fn the_limits_are_set_on_the_functions_constant_and_stated_in_its_docs() {
        let output = expanded("max_total_tokens = 20_000, max_cost_usd = 0.25, max_retries = 2");
        assert!(
            output.contains(
                "limits : :: agentic_runtime :: __private :: UsageLimits :: NONE . with_max_total_tokens (20000) . \
                 with_max_cost_usd (0.25)"
            ),
            "{output}"
        );
        assert!(output.contains(" **Spend limits:** at most 20 000 tokens, $0.25 per exec.\"]"), "{output}");

        let output = expanded("max_retries = 2");
        assert!(output.contains("limits : :: agentic_runtime :: __private :: UsageLimits :: NONE ,"), "{output}");
        assert!(!output.contains("Spend limits"), "{output}");
    }

    #[test]
    fn a_broken_limit_leaves_the_function_unchanged_with_the_error() {
        let output = expanded("max_total_tokens = 0");
        assert!(output.contains("compile_error"), "{output}");
        assert!(!output.contains("__AGENTIC_FUNCTION"), "{output}");
    }
}
