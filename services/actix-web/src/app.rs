//! The actix-web application: resources, handlers, extractors, one middleware.

use std::future::Future;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{App, Error, HttpRequest, HttpResponse, Responder, web};
use ping_common::response::{CONTENT_TYPE_TEXT, Message, PONG};

use crate::SERVICE;

/// Deviation id: the response headers are the canonical ones, in another order. Checked by the
/// conformance suite as declared (same header lines, any order).
pub const HEADER_ORDER: &str = "header-order";
/// Deviation id: request heads are refused only over 128 KiB, not 64 KiB.
pub const HEAD_LIMIT_128K: &str = "head-limit-128k";
/// Deviation id (conformance's `extra_deviation::CLOSE_ANSWERS_PIPELINED`).
pub const CLOSE_ANSWERS_PIPELINED: &str = "close-answers-pipelined";

/// The `App` factory `HttpServer` calls once per worker.
pub fn app() -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = Error,
        InitError = (),
    >,
> {
    App::new()
        .wrap_fn(|req, srv| {
            use actix_web::dev::Service as _;
            let rsp = srv.call(req);
            server_header(rsp)
        })
        .service(get_only("/ping").route(web::get().to(ping)))
        .service(get_only("/json").route(web::get().to(json)))
        .service(get_only("/sleep").route(web::get().to(sleep)))
        .default_service(web::to(not_found))
}

/// A resource whose other methods (HEAD too) get 405 with `Allow: GET` (actix's own 405 has
/// no `Allow`).
fn get_only(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(method_not_allowed))
}

/// The `--burn-ns` cost and `Server` on every response, and header names in canonical case
/// (actix-http writes them lower-case unless asked).
async fn server_header<B>(
    rsp: impl Future<Output = Result<ServiceResponse<B>, Error>>,
) -> Result<ServiceResponse<B>, Error> {
    let mut rsp = rsp.await?;
    // Every routed response passes here once (resources and default services): the
    // `--burn-ns` cost.
    ping_common::burn::per_request();
    rsp.response_mut().head_mut().set_camel_case_headers(true);
    rsp.headers_mut()
        .insert(header::SERVER, HeaderValue::from_static(SERVICE));
    Ok(rsp)
}

async fn ping() -> HttpResponse {
    HttpResponse::Ok()
        .content_type(CONTENT_TYPE_TEXT)
        .body(PONG)
}

async fn json() -> impl Responder {
    web::Json(Message {
        message: "Hello, World!",
    })
}

async fn sleep(req: HttpRequest) -> HttpResponse {
    match ping_common::route::sleep_ms(req.query_string()) {
        Some(ms) => {
            actix_web::rt::time::sleep(Duration::from_millis(ms)).await;
            ping().await
        }
        None => HttpResponse::BadRequest().finish(),
    }
}

async fn method_not_allowed() -> HttpResponse {
    HttpResponse::build(StatusCode::METHOD_NOT_ALLOWED)
        .insert_header((header::ALLOW, "GET"))
        .finish()
}

async fn not_found() -> HttpResponse {
    HttpResponse::NotFound().finish()
}
