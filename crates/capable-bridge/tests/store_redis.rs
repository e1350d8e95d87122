//! The store in a real `redis-server` (started by the test on 127.0.0.1, nothing
//! saved): the same answers as the store in memory, shared by two clients as two
//! replicas would; a Redis that is stopped fails each call within its timeout (and
//! is not asked again for a moment), and is found again once it is back.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use capable_bridge::store::{Gcra, RedisStore, Store, StoreError};
use capable_test_support::RedisServer;

const TIMEOUT: Duration = Duration::from_millis(200);

fn store(redis: &RedisServer) -> RedisStore {
    RedisStore::new(&redis.url(), None, TIMEOUT).unwrap()
}

#[tokio::test]
async fn two_replicas_share_one_callers_rate_calls_and_spent_states() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let (a, b) = (store(&redis), store(&redis));
    // 3 an hour: the burst is 3 across both, then a wait of about 20 minutes.
    let rate = Gcra {
        requests: NonZeroU32::new(3).unwrap(),
        per: Duration::from_secs(3600),
    };
    assert_eq!(a.rate("capable:rate:k", rate).await.unwrap(), None);
    assert_eq!(b.rate("capable:rate:k", rate).await.unwrap(), None);
    assert_eq!(a.rate("capable:rate:k", rate).await.unwrap(), None);
    let wait = b.rate("capable:rate:k", rate).await.unwrap().expect("over");
    assert!(
        wait > Duration::from_secs(1190) && wait <= Duration::from_secs(1200),
        "{wait:?}"
    );
    assert_eq!(
        a.rate("capable:rate:other", rate).await.unwrap(),
        None,
        "another caller has its own"
    );
    // The key fades with the rate: it is gone once the burst would be whole again.
    let ttl = redis.command("PTTL capable:rate:k").unwrap();
    let ttl: i64 = ttl.trim_start_matches(':').parse().unwrap();
    assert!(ttl > 3_500_000 && ttl <= 3_600_000, "{ttl}");

    // Calls at once, across both.
    let two = NonZeroU32::new(2).unwrap();
    let fade = Duration::from_secs(300);
    assert!(a.enter("capable:calls:k", two, fade).await.unwrap());
    assert!(b.enter("capable:calls:k", two, fade).await.unwrap());
    assert!(!a.enter("capable:calls:k", two, fade).await.unwrap());
    b.leave("capable:calls:k").await.unwrap();
    assert!(a.enter("capable:calls:k", two, fade).await.unwrap());
    let ttl = redis.command("PTTL capable:calls:k").unwrap();
    let ttl: i64 = ttl.trim_start_matches(':').parse().unwrap();
    assert!(ttl > 290_000, "a dead replica's count fades: {ttl}");
    a.leave("capable:calls:k").await.unwrap();
    a.leave("capable:calls:k").await.unwrap();
    assert_eq!(
        redis.command("EXISTS capable:calls:k").as_deref(),
        Some(":0")
    );

    // Spent once, on whichever replica.
    let ttl = Duration::from_secs(60);
    assert!(a.spend_once("capable:spent:s", ttl).await.unwrap());
    assert!(!b.spend_once("capable:spent:s", ttl).await.unwrap());
    assert!(!a.spend_once("capable:spent:s", ttl).await.unwrap());
    assert!(b.spend_once("capable:spent:t", ttl).await.unwrap());
}

#[tokio::test]
async fn a_level_set_by_one_replica_is_read_by_another_told_of_it() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let (a, b) = (store(&redis), store(&redis));
    let (a, b) = (a.levels().unwrap(), b.levels().unwrap());
    let key = "capable:level:k";
    assert_eq!(b.level(key).await.unwrap(), None);
    let watch = b.watch(key);
    // Told once its pub/sub connection is up (for the words it may have missed).
    let told = Duration::from_secs(5);
    tokio::time::timeout(told, watch.changed()).await.unwrap();
    a.set(key, "error").await.unwrap();
    tokio::time::timeout(told, watch.changed()).await.unwrap();
    assert_eq!(b.level(key).await.unwrap().as_deref(), Some("error"));
    // Kept as long as a sealed session lives, by name only.
    let ttl = redis.command(&format!("PTTL {key}")).unwrap();
    let ttl: i64 = ttl.trim_start_matches(':').parse().unwrap();
    assert!(ttl > 23 * 3_600_000, "{ttl}");
    // A value no level's name is as long as is none of ours.
    redis
        .command(&format!("SET {key} {}", "x".repeat(64)))
        .unwrap();
    assert_eq!(b.level(key).await.unwrap(), None);
}

#[tokio::test]
async fn a_stopped_redis_fails_fast_and_is_found_again_when_it_is_back() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let s = store(&redis);
    s.ping().await.unwrap();
    redis.stop();
    let started = Instant::now();
    let failed = s
        .spend_once("capable:spent:x", Duration::from_secs(5))
        .await;
    assert!(failed.is_err(), "{failed:?}");
    assert!(
        started.elapsed() < TIMEOUT + Duration::from_millis(300),
        "bounded by the timeout: {:?}",
        started.elapsed()
    );
    // Not asked again for a moment: at once.
    let started = Instant::now();
    assert!(matches!(s.ping().await, Err(StoreError::Down)));
    assert!(started.elapsed() < Duration::from_millis(50));
    redis.restart();
    // Found again after its rest (one second), reconnected by the client.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match s
            .spend_once("capable:spent:x", Duration::from_secs(5))
            .await
        {
            Ok(first) => {
                assert!(first, "a Redis started afresh has nothing spent");
                break;
            }
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("not found again: {e}"),
        }
    }
}

#[tokio::test]
async fn a_password_is_sent_and_never_shown() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    assert_eq!(
        redis
            .command("CONFIG SET requirepass hunter2-pw")
            .as_deref(),
        Some("+OK")
    );
    let without = RedisStore::new(&redis.url(), None, TIMEOUT).unwrap();
    let refused = without.ping().await.unwrap_err().to_string();
    assert!(!refused.contains("hunter2"), "{refused}");
    let with = RedisStore::new(&redis.url(), Some("hunter2-pw"), TIMEOUT).unwrap();
    with.ping().await.unwrap();
    let wrong = RedisStore::new(&redis.url(), Some("wrong-pw"), TIMEOUT).unwrap();
    let said = wrong.ping().await.unwrap_err().to_string();
    assert!(!said.contains("wrong-pw"), "{said}");
    assert!(!format!("{with:?}").contains("hunter2"));
}
