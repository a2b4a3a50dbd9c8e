//! The fault server's TLS material, generated when the server starts (rcgen, rustls with the ring
//! provider): a test CA the runners trust (written as PEM to `target/faults/`, the file
//! `RETRYGEN_FAULT_CA_FILE` names), a server certificate it signed for IP `127.0.0.1` and DNS
//! `localhost`, and a second CA nobody trusts with its own server certificate (the untrusted
//! port). Nothing is read from or written to a system trust store.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::ServerConfig;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A CA and the server certificate it signed.
pub struct Authority {
    /// The CA certificate, PEM.
    pub ca_pem: String,
    chain: Vec<CertificateDer<'static>>,
    key: PrivatePkcs8KeyDer<'static>,
}

fn tls_error(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("TLS setup: {e}"))
}

impl Authority {
    /// A fresh CA named `name` and a server certificate for `127.0.0.1` and `localhost`.
    pub fn generate(name: &str) -> io::Result<Authority> {
        let ca_key = KeyPair::generate().map_err(tls_error)?;
        let mut ca = CertificateParams::default();
        ca.distinguished_name = rcgen::DistinguishedName::new();
        ca.distinguished_name.push(DnType::CommonName, name);
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        // UTCTime dates: every client's parser reads them (rcgen's default ends in 4096).
        ca.not_before = rcgen::date_time_ymd(2020, 1, 1);
        ca.not_after = rcgen::date_time_ymd(2049, 12, 31);
        let ca_cert = ca.self_signed(&ca_key).map_err(tls_error)?;
        let issuer = Issuer::new(ca.clone(), ca_key);

        let leaf_key = KeyPair::generate().map_err(tls_error)?;
        let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".into()])
            .map_err(tls_error)?;
        leaf.distinguished_name = rcgen::DistinguishedName::new();
        leaf.distinguished_name
            .push(DnType::CommonName, "localhost");
        leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        // OpenSSL's strict mode (Python 3.13's default context) wants the AKI on a leaf.
        leaf.use_authority_key_identifier_extension = true;
        leaf.not_before = ca.not_before;
        leaf.not_after = ca.not_after;
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer).map_err(tls_error)?;
        Ok(Authority {
            ca_pem: ca_cert.pem(),
            chain: vec![leaf_cert.der().clone()],
            key: PrivatePkcs8KeyDer::from(leaf_key.serialize_der()),
        })
    }

    /// A rustls server configuration presenting the server certificate and offering exactly
    /// `alpn` (a client that offers ALPN without it fails the handshake).
    pub fn server_config(&self, alpn: &[u8]) -> io::Result<Arc<ServerConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(tls_error)?
            .with_no_client_auth()
            .with_single_cert(
                self.chain.clone(),
                PrivateKeyDer::Pkcs8(self.key.clone_key()),
            )
            .map_err(tls_error)?;
        config.alpn_protocols = vec![alpn.to_vec()];
        Ok(Arc::new(config))
    }
}

/// The CA file of one server: `target/faults/fault-ca-<pid>-<n>.pem`, removed when dropped (each
/// server of each process has its own, so concurrent runs never share or delete another's).
pub struct CaFile {
    pub path: PathBuf,
}

impl CaFile {
    pub fn write(dir: &Path, pem: &str) -> io::Result<CaFile> {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        std::fs::create_dir_all(dir)?;
        remove_orphans(dir);
        let n = COUNT.fetch_add(1, Ordering::SeqCst);
        let path = dir.join(format!("fault-ca-{}-{n}.pem", std::process::id()));
        std::fs::write(&path, pem)?;
        Ok(CaFile { path })
    }
}

/// Removes the CA files of processes that ended without dropping their server (killed).
fn remove_orphans(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("fault-ca-"))
            .and_then(|n| n.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

impl Drop for CaFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
