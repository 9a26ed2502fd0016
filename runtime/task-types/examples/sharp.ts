/**
 * sharp, loaded on demand. It is native (about 20 MB with its platform binary) and used only by
 * the photo example, so the installed package names it as an optional peer dependency: a
 * project that submits work or defines its own task types never downloads it.
 */
import type SharpModule from 'sharp';

export type Sharp = typeof SharpModule;

/** sharp, or undefined when it is not installed. */
export async function loadSharp(): Promise<Sharp | undefined> {
  try {
    return (await import('sharp')).default;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

export const SHARP_MISSING = 'sharp is not installed (npm i sharp): the photo example needs it';
