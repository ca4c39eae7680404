use crate::helpers::{problem, spawn_app};

#[tokio::test]
async fn healthz_and_readyz_answer() {
    let app = spawn_app().await;
    for path in ["/healthz", "/readyz"] {
        let res = app
            .client
            .get(format!("{}{path}", app.address))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200, "{path}");
    }
}

#[tokio::test]
async fn request_ids_are_echoed_or_generated() {
    let app = spawn_app().await;
    let res = app
        .client
        .get(format!("{}/healthz", app.address))
        .header("x-request-id", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-request-id"], "abc-123");
    let res = app
        .client
        .get(format!("{}/healthz", app.address))
        .send()
        .await
        .unwrap();
    assert!(!res.headers()["x-request-id"].is_empty());
}

#[tokio::test]
async fn unknown_routes_and_methods_are_problems() {
    let app = spawn_app().await;
    let res = app
        .client
        .get(format!("{}/nope", app.address))
        .send()
        .await
        .unwrap();
    problem(res, 404, "not-found").await;
    let res = app
        .client
        .get(format!("{}/v1/prepare", app.address))
        .send()
        .await
        .unwrap();
    problem(res, 405, "method-not-allowed").await;
}
