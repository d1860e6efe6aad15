//! GitHub Actions expressions, as far as `explain` needs them to decide a job's `if:`, its
//! `name:` and a concurrency group: literals, context paths, `!`, `==`, `!=`, `&&`, `||`,
//! parentheses, and the functions `contains`, `startsWith`, `endsWith`, `format`,
//! `fromJSON`, `toJSON` and the status checks.
//!
//! Semantics follow https://docs.github.com/en/actions/reference/workflows-and-actions/expressions:
//! `&&`/`||` yield an operand (not a boolean), strings compare case-insensitively, and values of
//! different types compare as numbers.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("expression {expr:?}: {message}")]
pub struct ExprError {
    pub expr: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Str(String),
    Num(f64),
    Ident(String),
    Op(&'static str),
}

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'\'' {
            let mut s = String::new();
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err("unterminated string".into()),
                    Some(b'\'') if b.get(i + 1) == Some(&b'\'') => {
                        s.push('\'');
                        i += 2;
                    }
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(_) => {
                        let ch = src[i..].chars().next().expect("in bounds");
                        s.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            out.push(Tok::Str(s));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            out.push(Tok::Num(src[start..i].parse().map_err(|_| "bad number")?));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b"_-".contains(&b[i])) {
                i += 1;
            }
            out.push(Tok::Ident(src[start..i].to_owned()));
        } else {
            let two = src.get(i..i + 2);
            let op = match two {
                Some("==") => "==",
                Some("!=") => "!=",
                Some("&&") => "&&",
                Some("||") => "||",
                Some("<=") => "<=",
                Some(">=") => ">=",
                _ => match c {
                    b'!' => "!",
                    b'(' => "(",
                    b')' => ")",
                    b',' => ",",
                    b'.' => ".",
                    b'[' => "[",
                    b']' => "]",
                    b'*' => "*",
                    b'<' => "<",
                    b'>' => ">",
                    _ => return Err(format!("unexpected character {:?}", c as char)),
                },
            };
            i += op.len();
            out.push(Tok::Op(op));
        }
    }
    Ok(out)
}

/// What an expression can read: `github.*`, `needs.*`, and whether the job's `needs` all
/// succeeded (for `success()`).
pub struct Context<'a> {
    pub root: &'a Value,
    pub needs_succeeded: bool,
}

struct Parser<'a, 'c> {
    toks: Vec<Tok>,
    pos: usize,
    ctx: &'a Context<'c>,
    /// Whether a status function was called (GitHub adds `success() &&` otherwise).
    saw_status: bool,
}

pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn as_number(v: &Value) -> f64 {
    match v {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) if s.trim().is_empty() => 0.0,
        Value::String(s) => s.trim().parse().unwrap_or(f64::NAN),
        Value::Array(_) | Value::Object(_) => f64::NAN,
    }
}

fn loose_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.eq_ignore_ascii_case(y),
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => {
            std::ptr::eq(a, b)
        }
        _ => as_number(a) == as_number(b),
    }
}

/// How a value reads in `format()` and in a name.
pub fn display(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl Parser<'_, '_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Value, String> {
        let mut left = self.and()?;
        while self.eat("||") {
            let right = self.and()?;
            left = if truthy(&left) { left } else { right };
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Value, String> {
        let mut left = self.cmp()?;
        while self.eat("&&") {
            let right = self.cmp()?;
            left = if truthy(&left) { right } else { left };
        }
        Ok(left)
    }

    fn cmp(&mut self) -> Result<Value, String> {
        let left = self.unary()?;
        let op = match self.peek() {
            Some(Tok::Op(op @ ("==" | "!=" | "<" | ">" | "<=" | ">="))) => *op,
            _ => return Ok(left),
        };
        self.pos += 1;
        let right = self.unary()?;
        let (x, y) = (as_number(&left), as_number(&right));
        Ok(Value::Bool(match op {
            "==" => loose_eq(&left, &right),
            "!=" => !loose_eq(&left, &right),
            "<" => x < y,
            ">" => x > y,
            "<=" => x <= y,
            _ => x >= y,
        }))
    }

    fn unary(&mut self) -> Result<Value, String> {
        if self.eat("!") {
            let v = self.unary()?;
            return Ok(Value::Bool(!truthy(&v)));
        }
        self.postfix()
    }

    fn postfix(&mut self) -> Result<Value, String> {
        let mut v = self.primary()?;
        loop {
            if self.eat(".") {
                if self.eat("*") {
                    return Err("`.*` filters are not modelled".into());
                }
                match self.toks.get(self.pos).cloned() {
                    Some(Tok::Ident(name)) => {
                        self.pos += 1;
                        v = v.get(&name).cloned().unwrap_or(Value::Null);
                    }
                    _ => return Err("expected a property name after `.`".into()),
                }
            } else if self.eat("[") {
                let key = self.or()?;
                if !self.eat("]") {
                    return Err("expected `]`".into());
                }
                v = match (&v, &key) {
                    (Value::Array(a), k) => {
                        a.get(as_number(k) as usize).cloned().unwrap_or(Value::Null)
                    }
                    (Value::Object(o), k) => o.get(&display(k)).cloned().unwrap_or(Value::Null),
                    _ => Value::Null,
                };
            } else {
                return Ok(v);
            }
        }
    }

    fn args(&mut self) -> Result<Vec<Value>, String> {
        let mut args = Vec::new();
        if self.eat(")") {
            return Ok(args);
        }
        loop {
            args.push(self.or()?);
            if self.eat(")") {
                return Ok(args);
            }
            if !self.eat(",") {
                return Err("expected `,` or `)` in a call".into());
            }
        }
    }

    fn primary(&mut self) -> Result<Value, String> {
        let tok = self.toks.get(self.pos).cloned().ok_or("unexpected end")?;
        self.pos += 1;
        match tok {
            Tok::Str(s) => Ok(Value::String(s)),
            Tok::Num(n) => Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)),
            Tok::Op("(") => {
                let v = self.or()?;
                if !self.eat(")") {
                    return Err("expected `)`".into());
                }
                Ok(v)
            }
            Tok::Ident(id) => {
                if self.eat("(") {
                    let args = self.args()?;
                    return self.call(&id, &args);
                }
                Ok(match id.as_str() {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    "null" => Value::Null,
                    _ => self.ctx.root.get(&id).cloned().unwrap_or(Value::Null),
                })
            }
            Tok::Op(op) => Err(format!("unexpected `{op}`")),
        }
    }

    fn call(&mut self, name: &str, args: &[Value]) -> Result<Value, String> {
        let arity = |n: usize| {
            if args.len() == n {
                Ok(())
            } else {
                Err(format!("{name}() takes {n} argument(s)"))
            }
        };
        match name.to_ascii_lowercase().as_str() {
            "always" => {
                self.saw_status = true;
                Ok(Value::Bool(true))
            }
            "success" => {
                self.saw_status = true;
                Ok(Value::Bool(self.ctx.needs_succeeded))
            }
            "failure" => {
                self.saw_status = true;
                Ok(Value::Bool(!self.ctx.needs_succeeded))
            }
            "cancelled" => {
                self.saw_status = true;
                Ok(Value::Bool(false))
            }
            "contains" => {
                arity(2)?;
                Ok(Value::Bool(match &args[0] {
                    Value::Array(items) => items.iter().any(|i| loose_eq(i, &args[1])),
                    hay => display(hay)
                        .to_lowercase()
                        .contains(&display(&args[1]).to_lowercase()),
                }))
            }
            "startswith" => {
                arity(2)?;
                Ok(Value::Bool(
                    display(&args[0])
                        .to_lowercase()
                        .starts_with(&display(&args[1]).to_lowercase()),
                ))
            }
            "endswith" => {
                arity(2)?;
                Ok(Value::Bool(
                    display(&args[0])
                        .to_lowercase()
                        .ends_with(&display(&args[1]).to_lowercase()),
                ))
            }
            "format" => {
                let Some(fmt) = args.first() else {
                    return Err("format() needs a format string".into());
                };
                let mut out = display(fmt);
                for (i, a) in args[1..].iter().enumerate() {
                    out = out.replace(&format!("{{{i}}}"), &display(a));
                }
                Ok(Value::String(out))
            }
            "fromjson" => {
                arity(1)?;
                serde_json::from_str(&display(&args[0])).map_err(|e| format!("fromJSON: {e}"))
            }
            "tojson" => {
                arity(1)?;
                Ok(Value::String(args[0].to_string()))
            }
            other => Err(format!("the function {other}() is not modelled")),
        }
    }
}

/// Strips `${{ }}` around a whole condition.
fn unwrap(src: &str) -> &str {
    let t = src.trim();
    t.strip_prefix("${{")
        .and_then(|t| t.strip_suffix("}}"))
        .unwrap_or(t)
}

/// Evaluates one expression (with or without `${{ }}`); also says whether it called a
/// status function.
pub fn eval(src: &str, ctx: &Context<'_>) -> Result<(Value, bool), ExprError> {
    let err = |message: String| ExprError {
        expr: src.to_owned(),
        message,
    };
    let toks = lex(unwrap(src)).map_err(err)?;
    let mut p = Parser {
        toks,
        pos: 0,
        ctx,
        saw_status: false,
    };
    let v = p.or().map_err(err)?;
    if p.pos != p.toks.len() {
        return Err(err("trailing tokens".into()));
    }
    Ok((v, p.saw_status))
}

/// A job's `if:`: GitHub puts `success() &&` in front unless a status function is called.
pub fn job_condition(src: Option<&str>, ctx: &Context<'_>) -> Result<bool, ExprError> {
    let Some(src) = src else {
        return Ok(ctx.needs_succeeded);
    };
    let (v, saw_status) = eval(src, ctx)?;
    Ok(truthy(&v) && (saw_status || ctx.needs_succeeded))
}

/// A string with `${{ }}` parts (a job name, a concurrency group): each part evaluated.
pub fn interpolate(src: &str, ctx: &Context<'_>) -> Result<String, ExprError> {
    let mut out = String::new();
    let mut rest = src;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 3..];
        let end = after.find("}}").ok_or_else(|| ExprError {
            expr: src.to_owned(),
            message: "unclosed `${{`".into(),
        })?;
        out.push_str(&display(&eval(&after[..end], ctx)?.0));
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn table() {
        let root = json!({
            "github": {"event_name": "pull_request", "event": {"label": {"name": "ci:triggered"},
                "pull_request": {"number": 7}, "comment": {"body": "/test mini", "author_association": "MEMBER"}}},
            "needs": {"request": {"outputs": {"build": "true"}, "result": "success"}}
        });
        let ctx = Context {
            root: &root,
            needs_succeeded: true,
        };
        let cases: &[(&str, Value)] = &[
            ("github.event_name == 'pull_request'", json!(true)),
            ("github.event_name == 'PULL_REQUEST'", json!(true)),
            ("github.event_name != 'push'", json!(true)),
            ("github.event.missing.deeper", Value::Null),
            ("!github.event.missing", json!(true)),
            ("github.event_name == 'push' && 'a' || 'b'", json!("b")),
            (
                "github.event.label.name == 'ci:triggered' && format('g-{0}', github.event.pull_request.number) || 'x'",
                json!("g-7"),
            ),
            (
                "contains(fromJSON('[\"OWNER\", \"MEMBER\"]'), github.event.comment.author_association)",
                json!(true),
            ),
            ("contains(github.event.comment.body, '/TEST')", json!(true)),
            (
                "startsWith(github.event.comment.body, '/test')",
                json!(true),
            ),
            ("needs.request.outputs.build == 'true'", json!(true)),
            ("(1 == 1) && !(2 == 3)", json!(true)),
            ("'it''s'", json!("it's")),
            ("0 == ''", json!(true)),
        ];
        for (src, want) in cases {
            assert_eq!(&eval(src, &ctx).unwrap().0, want, "{src}");
        }
        assert!(eval("foo(", &ctx).is_err());
        assert!(
            eval("hashFiles('x')", &ctx)
                .unwrap_err()
                .to_string()
                .contains("not modelled")
        );
        let failed = Context {
            root: &root,
            needs_succeeded: false,
        };
        assert!(!job_condition(Some("true"), &failed).unwrap());
        assert!(job_condition(Some("always()"), &failed).unwrap());
        assert!(job_condition(None, &ctx).unwrap());
        assert_eq!(
            interpolate("n-${{ github.event.pull_request.number }}-${{ 'x' }}", &ctx).unwrap(),
            "n-7-x"
        );
    }
}
