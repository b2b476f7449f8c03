//! A phone's login link and its QR code, for the Tokens page: the link opens `/login` with a
//! single-use code that logs in as a new `approve` token (`Core::mint_phone_login_code`), at
//! the address the page itself was opened at; the QR code is drawn from exactly that link, as
//! SVG, on the server (no image crate and nothing in the browser's bundle).

use qrcode::QrCode;
use qrcode::render::svg;

use super::{Core, Error};
use crate::protocol::PhoneLogin;
use crate::server::principal::Principal;

/// The link to give a phone: `<origin>/login?code=<code>`. `origin` is the page's own
/// (`window.location.origin`): an `http` or `https` address, of which only the scheme, host
/// and port are kept.
pub fn login_link(origin: &str, code: &str) -> Result<String, Error> {
    let bad = || Error::InvalidRequest(format!("not an http(s) address to open: {origin:?}"));
    let base = url::Url::parse(origin.trim()).map_err(|_| bad())?;
    if !matches!(base.scheme(), "http" | "https") || base.host().is_none() {
        return Err(bad());
    }
    let origin = base.origin().ascii_serialization();
    Ok(format!("{origin}/login?code={code}"))
}

/// `link` as a QR code in SVG (dark on white whatever the page's theme, as scanners expect),
/// without the XML prolog so it can stand inside HTML.
pub fn qr_svg(link: &str) -> Result<String, Error> {
    let code = QrCode::new(link.as_bytes())
        .map_err(|e| Error::InvalidRequest(format!("the link does not fit a QR code: {e}")))?;
    let svg = code
        .render::<svg::Color>()
        .min_dimensions(200, 200)
        .dark_color(svg::Color("#000000"))
        .light_color(svg::Color("#ffffff"))
        .build();
    Ok(match svg.find("<svg") {
        Some(start) => svg[start..].to_owned(),
        None => svg,
    })
}

impl Core {
    /// A phone's login link for the `approve` token whose secret is `secret`, and its QR
    /// code: at `server.public_url` when it is set (where the notifier's links go too), else at
    /// `origin`, the page's own address.
    pub async fn phone_login(
        &self,
        who: &Principal,
        secret: &str,
        origin: &str,
    ) -> Result<PhoneLogin, Error> {
        let public_url = self.config().config.server.public_url.clone();
        let origin = if public_url.is_empty() {
            origin
        } else {
            public_url.as_str()
        };
        login_link(origin, "")?;
        let code = self.mint_phone_login_code(who, secret).await?;
        phone_login(origin, &code)
    }
}

/// The link for `code` at `origin`, and its QR code.
pub fn phone_login(origin: &str, code: &str) -> Result<PhoneLogin, Error> {
    let link = login_link(origin, code)?;
    let qr_svg = qr_svg(&link)?;
    Ok(PhoneLogin { link, qr_svg })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_keeps_only_the_pages_origin() {
        assert_eq!(
            login_link("http://192.168.1.20:7411", "csl_abc").unwrap(),
            "http://192.168.1.20:7411/login?code=csl_abc"
        );
        assert_eq!(
            login_link("https://box.lan/tokens?x=1#y", "csl_abc").unwrap(),
            "https://box.lan/login?code=csl_abc"
        );
        for bad in ["javascript:alert(1)", "file:///etc/passwd", "not a url", ""] {
            assert!(login_link(bad, "csl_abc").is_err(), "{bad}");
        }
    }

    #[test]
    fn the_qr_code_is_drawn_from_exactly_the_link() {
        let link = "http://127.0.0.1:7411/login?code=csl_abc";
        let made = phone_login("http://127.0.0.1:7411", "csl_abc").unwrap();
        assert_eq!(made.link, link);
        assert_eq!(made.qr_svg, qr_svg(link).unwrap());
        assert!(made.qr_svg.starts_with("<svg"), "{}", made.qr_svg);
        // Another link draws another code.
        assert_ne!(made.qr_svg, qr_svg(&format!("{link}x")).unwrap());
        // The same modules a QR code of the link has, dark where it is dark.
        let modules = QrCode::new(link.as_bytes()).unwrap();
        let dark = modules
            .to_colors()
            .iter()
            .filter(|c| **c == qrcode::Color::Dark)
            .count();
        assert_eq!(
            made.qr_svg.matches("M").count(),
            dark,
            "one path step per dark module"
        );
    }
}
