/**
 * What a route is: method, path template, the schemas of its inputs and outputs (for
 * validation and for the OpenAPI document) and a handler that receives validated input.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { z } from 'zod';
import type { Services } from '../app/wiring.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface ApiResponse {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

export interface RouteContext<Params, Query, Body> {
  readonly params: Params;
  readonly query: Query;
  readonly body: Body;
  readonly event: APIGatewayProxyEventV2;
  readonly services: Services;
  /** Throws 403 `forbidden` unless the caller may act for the tenant. */
  requireTenant(tenantId: string): Promise<void>;
  /** Whether the caller may act for the tenant (task routes answer 404 rather than leak existence). */
  mayActFor(tenantId: string): Promise<boolean>;
}

export interface ResponseSpec {
  readonly description: string;
  readonly schema?: z.ZodType;
  /** A response body for the OpenAPI document (errors get a generic one by status). */
  readonly example?: unknown;
}

export interface RouteDefinition<Params = unknown, Query = unknown, Body = unknown> {
  readonly method: HttpMethod;
  /** OpenAPI-style template: `/v1/tasks/{taskId}`. */
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly params: z.ZodType<Params>;
  readonly query: z.ZodType<Query>;
  /**
   * Absent: the body is ignored (GET). `required: false`: an empty body is fine. `maxBytes`:
   * this route's body limit, when not MAX_BODY_BYTES (the batch submit's).
   */
  readonly body?: {
    readonly schema: z.ZodType<Body>;
    readonly required: boolean;
    readonly example?: unknown;
    readonly maxBytes?: number;
  };
  readonly responses: Readonly<Record<number, ResponseSpec>>;
  handle(context: RouteContext<Params, Query, Body>): Promise<ApiResponse>;
}

/** A route of any input types (the router holds them side by side). */
// biome-ignore lint/suspicious/noExplicitAny: each route has its own input types
export type AnyRoute = RouteDefinition<any, any, any>;

/** Define a route with its handler's input types inferred from its schemas. */
export function defineRoute<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType = z.ZodUndefined>(route: {
  method: HttpMethod;
  path: string;
  operationId: string;
  summary: string;
  params: P;
  query: Q;
  body?: { schema: B; required: boolean; example?: unknown; maxBytes?: number };
  responses: Record<number, ResponseSpec>;
  handle(context: RouteContext<z.output<P>, z.output<Q>, z.output<B>>): Promise<ApiResponse>;
}): RouteDefinition<z.output<P>, z.output<Q>, z.output<B>> {
  return route as unknown as RouteDefinition<z.output<P>, z.output<Q>, z.output<B>>;
}
