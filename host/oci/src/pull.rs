//! Pulling: each reference resolved once and pinned in `glovebox.lock`, its
//! component fetched into the cache under its digest, checked before kept.

use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use glovebox_manifest::{ComponentStore, LockedComponent, OciComponents, OciLock, OciReference};
use oci_client::manifest::OciDescriptor;
use tokio::io::AsyncWrite;

use crate::OciError;
use crate::artifact::{LAYER_MEDIA_TYPE, pin_of};
use crate::registry::{Doing, Registry, failed, image};

/// What a pull did for one reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pulled {
    /// Its pin in the lock, after the pull.
    pub pin: LockedComponent,
    /// Whether its bytes came over the network now (else: already cached).
    pub fetched: bool,
    /// The pin it had before, when `--update` moved it.
    pub moved_from: Option<LockedComponent>,
}

/// Makes every reference of `components` loadable: a reference pinned in
/// the lock and whose component is cached costs nothing (no network); a
/// pinned one missing from the cache is fetched by its pinned digests; one
/// not pinned yet (or every one, with `update`) is resolved in its registry
/// and pinned. The lock is written once, whole, with what succeeded, also
/// when a later reference fails.
pub async fn pull(components: &OciComponents, update: bool) -> Result<Vec<Pulled>, OciError> {
    let store = &components.store;
    let mut lock = OciLock::read(&store.lock)?;
    let before = lock.clone();
    let needs_network = |r: &OciReference| {
        update
            || lock
                .get(&r.text)
                .is_none_or(|pin| !store.component_path(&pin.component).is_file())
    };
    let registry = components
        .references
        .iter()
        .any(needs_network)
        .then(|| Registry::new(&components.references));
    let mut done = Vec::new();
    let mut outcome = Ok(());
    for reference in &components.references {
        match pull_one(
            registry.as_ref(),
            store,
            &mut lock,
            reference,
            update,
            components.max_component_bytes,
        )
        .await
        {
            Ok(pulled) => done.push(pulled),
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    if lock != before {
        lock.write(&store.lock).map_err(|error| OciError::File {
            action: "write",
            path: store.lock.clone(),
            error,
        })?;
    }
    outcome.map(|()| done)
}

async fn pull_one(
    registry: Option<&Registry>,
    store: &ComponentStore,
    lock: &mut OciLock,
    reference: &OciReference,
    update: bool,
    max_bytes: u64,
) -> Result<Pulled, OciError> {
    let pinned = lock.get(&reference.text).cloned();
    let cached = |pin: &LockedComponent| store.component_path(&pin.component).is_file();
    if let Some(pin) = &pinned
        && !update
        && cached(pin)
    {
        return Ok(Pulled {
            pin: pin.clone(),
            fetched: false,
            moved_from: None,
        });
    }
    let registry = registry.expect("a client is made when a reference needs the network");
    let pin = match pinned.clone().filter(|_| !update) {
        // Pinned, not cached: the pinned bytes, whatever the tag says now.
        Some(pin) => pin,
        None => resolve(registry, reference, max_bytes).await?,
    };
    let fetched = !cached(&pin);
    if fetched {
        fetch(registry, store, reference, &pin, max_bytes).await?;
    }
    let moved_from = pinned.filter(|old| *old != pin);
    lock.pin(pin.clone());
    Ok(Pulled {
        pin,
        fetched,
        moved_from,
    })
}

/// Asks the registry what `reference` names now: its manifest's digest and
/// its one component layer.
async fn resolve(
    registry: &Registry,
    reference: &OciReference,
    max_bytes: u64,
) -> Result<LockedComponent, OciError> {
    let image = image(reference, None)?;
    let (manifest, digest) = registry
        .client
        .pull_image_manifest(&image, &registry.auth)
        .await
        .map_err(|e| failed(reference, Doing::Pull, e))?;
    if let Some(named) = &reference.digest
        && *named != digest
    {
        return Err(OciError::Tampered {
            reference: reference.text.clone(),
            expected: named.clone(),
            actual: digest,
        });
    }
    pin_of(reference, &manifest, digest, max_bytes)
}

/// Fetches the component `pin` names into the cache: written to a file of
/// its own beside the final one and renamed into place only once the
/// client checked it against its digest, so the cache never holds a
/// partial or wrong component.
async fn fetch(
    registry: &Registry,
    store: &ComponentStore,
    reference: &OciReference,
    pin: &LockedComponent,
    max_bytes: u64,
) -> Result<(), OciError> {
    let image = image(reference, Some(&pin.manifest))?;
    let path = store.component_path(&pin.component);
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_error = |action, path: &Path| {
        let path = path.to_path_buf();
        move |error| OciError::File {
            action,
            path,
            error,
        }
    };
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(file_error("write", dir))?;
    let partial = dir.join(format!(
        ".{}.{}.partial",
        pin.component_hex(),
        std::process::id()
    ));
    let file = tokio::fs::File::create(&partial)
        .await
        .map_err(file_error("write", &partial))?;
    let layer = OciDescriptor {
        media_type: LAYER_MEDIA_TYPE.to_owned(),
        digest: pin.component.clone(),
        size: i64::try_from(pin.size).unwrap_or(i64::MAX),
        ..OciDescriptor::default()
    };
    let mut out = Capped {
        inner: file,
        written: 0,
        max: max_bytes,
    };
    let pulled = registry.client.pull_blob(&image, &layer, &mut out).await;
    let written = out.written;
    let kept = match pulled {
        Ok(()) => match out.inner.sync_all().await {
            Ok(()) => tokio::fs::rename(&partial, &path)
                .await
                .map_err(file_error("write", &path)),
            Err(e) => Err(file_error("write", &partial)(e)),
        },
        Err(_) if written > max_bytes => Err(OciError::TooLarge {
            reference: reference.text.clone(),
            size: written,
            limit: max_bytes,
        }),
        Err(e) => Err(failed(reference, Doing::Pull, e)),
    };
    if kept.is_err() {
        let _ = tokio::fs::remove_file(&partial).await;
    }
    kept
}

/// A file that refuses more than `max` bytes: a registry that sends more
/// than the host takes is cut off, not followed.
struct Capped {
    inner: tokio::fs::File,
    written: u64,
    max: u64,
}

impl AsyncWrite for Capped {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let len = buf.len() as u64;
        if self.written + len > self.max {
            self.written += len;
            return Poll::Ready(Err(std::io::Error::other(
                "the component is larger than runtime.max_component_bytes",
            )));
        }
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Ready(Ok(n)) => {
                this.written += n as u64;
                Poll::Ready(Ok(n))
            }
            other => other,
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
