/**
 * Trace context through a task's life (issue 27): a W3C `traceparent` given at submit is stored
 * on the task and continued by three spans, `task.submit` (child of the caller's span),
 * `task.wait` (queued → dispatched, recorded by the scheduler) and `task.run` (one attempt, in
 * the worker), each a child of the submit span; the handler gets the run span's `traceparent`
 * (`ctx.traceparent`) to parent its own work.
 *
 * Spans are exported over OTLP/HTTP (JSON) to `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) when set: any collector, or on AWS the ADOT collector
 * layer that forwards to X-Ray (docs/events.md). Unset, nothing is recorded and the SDK is never
 * loaded: it is imported on first use, so neither the client nor a process without an endpoint
 * loads it. Only tasks that carry a `traceparent` get spans: no trace is started for the others.
 */
import {
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type SpanStatusCode,
  TraceFlags,
  type Tracer,
  trace,
} from '@opentelemetry/api';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** Whether a string is a valid W3C trace context `traceparent` (version 00). */
export function isTraceparent(value: string): boolean {
  const match = TRACEPARENT.exec(value);
  return match !== null && match[1] !== ZERO_TRACE && match[2] !== ZERO_SPAN;
}

/** The context whose parent is the span a `traceparent` names (the root context when invalid). */
function contextOf(traceparent: string | undefined): Context {
  const match = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!match || match[1] === ZERO_TRACE || match[2] === ZERO_SPAN) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  });
}

/** The `traceparent` of a span. */
export function traceparentOf(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

interface Provider {
  getTracer(name: string): Tracer;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

let provider: Promise<Provider | undefined> | undefined;

/** Whether spans are exported (an OTLP endpoint is configured). */
export function tracingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

async function tracer(): Promise<Tracer | undefined> {
  provider ??= (async () => {
    if (!tracingEnabled()) return undefined;
    const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] =
      await Promise.all([
        import('@opentelemetry/sdk-trace-base'),
        import('@opentelemetry/exporter-trace-otlp-http'),
        import('@opentelemetry/resources'),
      ]);
    return new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME ?? 'task-scheduler' }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
  })();
  return (await provider)?.getTracer('task-scheduler');
}

export interface TaskSpan {
  /** The span's `traceparent` (the parent's, unchanged, when nothing is recorded). */
  readonly traceparent: string | undefined;
  end(outcome?: { error?: string; attributes?: Record<string, string | number | boolean> }): void;
}

/**
 * Start a span, child of `traceparent`. Nothing is recorded without a `traceparent` or an
 * endpoint; the returned `traceparent` is then the parent's.
 */
export async function startTaskSpan(
  name: string,
  traceparent: string | undefined,
  attributes: Record<string, string | number | boolean>,
  options: { startTime?: Date; kind?: SpanKind } = {},
): Promise<TaskSpan> {
  const none: TaskSpan = { traceparent, end() {} };
  if (!traceparent || !isTraceparent(traceparent)) return none;
  const active = await tracer();
  if (!active) return none;
  const span = active.startSpan(
    name,
    {
      kind: options.kind ?? SpanKind.INTERNAL,
      attributes,
      ...(options.startTime ? { startTime: options.startTime } : {}),
    },
    contextOf(traceparent),
  );
  return {
    traceparent: traceparentOf(span),
    end(outcome = {}) {
      if (outcome.attributes) span.setAttributes(outcome.attributes);
      if (outcome.error) span.setStatus({ code: 2 satisfies SpanStatusCode.ERROR, message: outcome.error });
      span.end();
    },
  };
}

/** A span whose start and end are known already (the wait: from queued to dispatched). */
export async function recordTaskSpan(
  name: string,
  traceparent: string | undefined,
  attributes: Record<string, string | number | boolean>,
  startTime: Date,
  endTime: Date,
): Promise<void> {
  if (!traceparent || !isTraceparent(traceparent)) return;
  const active = await tracer();
  if (!active) return;
  active.startSpan(name, { kind: SpanKind.INTERNAL, attributes, startTime }, contextOf(traceparent)).end(endTime);
}

/** Export what is buffered (a Lambda calls it before its invocation ends; it may be frozen after). */
export async function flushTraces(): Promise<void> {
  if (!provider) return;
  await (await provider)?.forceFlush();
}

export async function shutdownTracing(): Promise<void> {
  if (!provider) return;
  const current = await provider;
  provider = undefined;
  await current?.shutdown();
}
