//! The sign-in cookie. Cookies belong to a host, not to a port, so two AskBridge servers on one
//! machine (one per agent, as the README suggests) shared one `askbridge_token` cookie and signed
//! each other out. The cookie's name now carries a digest of the token it holds: servers with
//! different tokens keep their own cookies, and servers that share a token (a team behind one
//! address) share one.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use sha2::{Digest, Sha256};

/// The name every server used before; a cookie under it is accepted once and moved to the new
/// name.
pub const LEGACY_NAME: &str = "askbridge_token";

/// The cookie's name for `token`: 48 bits of a digest of it, which tells servers apart and says
/// nothing of the token that the cookie's value does not already carry.
pub fn name_for(token: &str) -> String {
    let digest = Sha256::new().chain_update(b"askbridge sign-in cookie\0").chain_update(token.as_bytes()).finalize();
    let tag: String = digest[..6].iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{LEGACY_NAME}_{tag}")
}

/// The value of the cookie `name` in the request, if it has one.
pub fn read(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(|cookies| {
        cookies.split(';').find_map(|cookie| {
            let (key, value) = cookie.trim().split_once('=')?;
            (key == name).then(|| percent_decode(value))
        })
    })
}

/// Signs the browser in: the token in an HttpOnly cookie for a year. Lax, so that the sign-in
/// link opened from another site signs in, while no other site's requests carry it.
pub fn set(response: &mut Response, name: &str, token: &str, secure: bool) {
    let secure = if secure { "; Secure" } else { "" };
    append(
        response,
        &format!("{name}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age=31536000{secure}", percent_encode(token)),
    );
}

/// Removes the cookie `name` from the browser.
pub fn clear(response: &mut Response, name: &str) {
    append(response, &format!("{name}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0"));
}

fn append(response: &mut Response, cookie: &str) {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

fn percent_encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_with_other_tokens_have_other_cookies_and_one_token_one_cookie() {
        let a = name_for("token-of-server-a-0123456789");
        assert_eq!(a, name_for("token-of-server-a-0123456789"));
        assert_ne!(a, name_for("token-of-server-b-0123456789"));
        assert!(a.starts_with("askbridge_token_") && a.len() == LEGACY_NAME.len() + 13, "{a}");
        assert!(a.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "a cookie name: {a}");
    }

    #[test]
    fn a_cookie_is_read_by_its_exact_name_and_its_value_round_trips() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_static("askbridge_token=old; askbridge_token_ab=a%20b%2Bc"));
        assert_eq!(read(&headers, "askbridge_token_ab").as_deref(), Some("a b+c"));
        assert_eq!(read(&headers, LEGACY_NAME).as_deref(), Some("old"));
        assert_eq!(read(&headers, "askbridge_token_cd"), None);
        assert_eq!(percent_decode(&percent_encode("a b+c/é%;=")), "a b+c/é%;=");
    }
}
