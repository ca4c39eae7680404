//! Single flight: identical summarizer calls in progress at the same moment share one
//! upstream call. The key is the cache key, so "identical" means what the
//! cache means by it: the same candidates, prompts, budget and strategy.
//!
//! Design decisions:
//! * The first caller leads and makes the call; the others wait on a `watch` channel for
//!   its outcome (success or failure alike, so a failing model is not asked again by each
//!   of them).
//! * A leader that is cancelled (its client went away) removes its entry when dropped;
//!   its followers see the channel close and start over, one of them leading. Nothing is
//!   spawned, so cancellation stays what it was: dropping a caller drops its request.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

use super::cache::Key;

/// The calls in progress, by key.
pub(super) struct Flights<T> {
    map: Mutex<HashMap<Key, watch::Receiver<Option<T>>>>,
}

impl<T> Default for Flights<T> {
    fn default() -> Self {
        Flights {
            map: Mutex::new(HashMap::new()),
        }
    }
}

/// Whether this caller makes the call or waits for another's.
pub(super) enum Role<'a, T> {
    Leader(Lead<'a, T>),
    Follower(watch::Receiver<Option<T>>),
}

/// The leader's duty: publish the outcome; its entry goes when it is dropped.
pub(super) struct Lead<'a, T> {
    flights: &'a Flights<T>,
    key: Key,
    tx: watch::Sender<Option<T>>,
}

impl<T: Clone> Flights<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, watch::Receiver<Option<T>>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Leads the call for `key`, or follows the one in progress.
    pub(super) fn join(&self, key: Key) -> Role<'_, T> {
        let mut map = self.lock();
        if let Some(rx) = map.get(&key) {
            return Role::Follower(rx.clone());
        }
        let (tx, rx) = watch::channel(None);
        map.insert(key, rx);
        Role::Leader(Lead {
            flights: self,
            key,
            tx,
        })
    }

    /// Calls in progress now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

impl<T: Clone> Lead<'_, T> {
    /// Hands the outcome to every follower.
    pub(super) fn finish(self, outcome: T) {
        self.tx.send_replace(Some(outcome));
    }
}

impl<T> Drop for Lead<'_, T> {
    fn drop(&mut self) {
        self.flights
            .map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
    }
}

/// The leader's outcome; `None` when it was dropped without one (then start over).
pub(super) async fn follow<T: Clone>(mut rx: watch::Receiver<Option<T>>) -> Option<T> {
    rx.wait_for(Option::is_some).await.ok()?.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn followers_get_the_leaders_outcome_or_start_over() {
        let flights = Flights::<u32>::default();
        let Role::Leader(lead) = flights.join([1; 32]) else {
            panic!("the first caller leads")
        };
        let Role::Follower(rx) = flights.join([1; 32]) else {
            panic!("the second follows")
        };
        assert!(matches!(flights.join([2; 32]), Role::Leader(_)));
        lead.finish(7);
        assert_eq!(follow(rx).await, Some(7));
        assert_eq!(flights.len(), 0, "the entry goes with its leader");

        let Role::Leader(lead) = flights.join([1; 32]) else {
            panic!()
        };
        let Role::Follower(rx) = flights.join([1; 32]) else {
            panic!()
        };
        drop(lead);
        assert_eq!(follow(rx).await, None, "a cancelled leader leaves nothing");
    }
}
